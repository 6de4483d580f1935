package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;

/**
 * {@link KafkaAssignments}: which records are flagged as possible redeliveries, and the container's
 * own rebalance listener still called as Spring Kafka would call it.
 */
class KafkaAssignmentsTest {
  private static final TopicPartition P0 = new TopicPartition("orders", 0);
  private static final TopicPartition P1 = new TopicPartition("orders", 1);

  @Test
  void aPartitionIsFlaggedUntilOneOfItsRecordsIsAppliedAndAgainAfterItsNextAssignment() {
    KafkaAssignments assignments = new KafkaAssignments(null);
    assertThat(assignments.mayBeRedelivered(record(P0, 7))).as("at start, before any callback").isTrue();

    assignments.applied(record(P0, 7));
    assertThat(assignments.mayBeRedelivered(record(P0, 8))).isFalse();
    assertThat(assignments.mayBeRedelivered(record(P1, 3))).as("another partition").isTrue();

    assignments.onPartitionsAssigned(null, List.of(P0));
    assertThat(assignments.mayBeRedelivered(record(P0, 9))).as("assigned again").isTrue();
    assignments.applied(record(P0, 9));
    assignments.onPartitionsRevokedBeforeCommit(null, List.of(P0));
    assertThat(assignments.mayBeRedelivered(record(P0, 10))).as("revoked").isTrue();
    assignments.applied(record(P0, 10));
    assignments.onPartitionsLost(null, List.of(P0));
    assertThat(assignments.mayBeRedelivered(record(P0, 11))).as("lost").isTrue();
    assertThat(assignments.mayBeRedelivered("not a record")).isFalse();
  }

  @Test
  void aPartitionAppliedOnAnotherConsumerThreadIsStillFlaggedOnThisOne() throws InterruptedException {
    KafkaAssignments assignments = new KafkaAssignments(null);
    Thread other = new Thread(() -> assignments.applied(record(P0, 1)));
    other.start();
    other.join();
    assertThat(assignments.mayBeRedelivered(record(P0, 2))).isTrue();
  }

  @Test
  void aPlainRebalanceListenerGetsItsPlainCallbacks() {
    List<String> calls = new ArrayList<>();
    ConsumerRebalanceListener plain = new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        calls.add("revoked " + partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        calls.add("assigned " + partitions);
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        calls.add("lost " + partitions);
      }
    };
    KafkaAssignments assignments = new KafkaAssignments(plain);
    assignments.onPartitionsAssigned(null, List.of(P0));
    assignments.onPartitionsRevokedBeforeCommit(null, List.of(P0));
    assignments.onPartitionsRevokedAfterCommit(null, List.of(P0));
    assignments.onPartitionsLost(null, List.of(P1));
    assertThat(calls).containsExactly("assigned [orders-0]", "revoked [orders-0]", "lost [orders-1]");
  }

  @Test
  void aConsumerAwareRebalanceListenerGetsItsConsumerAwareCallbacks() {
    List<String> calls = new ArrayList<>();
    AtomicBoolean plainCalled = new AtomicBoolean();
    ConsumerAwareRebalanceListener aware = new ConsumerAwareRebalanceListener() {
      @Override
      public void onPartitionsRevokedBeforeCommit(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
        calls.add("before commit " + partitions);
      }

      @Override
      public void onPartitionsRevokedAfterCommit(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
        calls.add("after commit " + partitions);
      }

      @Override
      public void onPartitionsLost(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
        calls.add("lost " + partitions);
      }

      @Override
      public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
        calls.add("assigned " + partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        plainCalled.set(true);
      }
    };
    KafkaAssignments assignments = new KafkaAssignments(aware);
    assignments.onPartitionsAssigned(null, List.of(P0));
    assignments.onPartitionsRevokedBeforeCommit(null, List.of(P0));
    assignments.onPartitionsRevokedAfterCommit(null, List.of(P0));
    assignments.onPartitionsLost(null, List.of(P1));
    assertThat(calls).containsExactly("assigned [orders-0]", "before commit [orders-0]",
        "after commit [orders-0]", "lost [orders-1]");
    assertThat(plainCalled).as("the plain callback, which Spring Kafka does not call on an aware listener").isFalse();
    assertThat(assignments.delegate()).isSameAs(aware);
  }

  private static ConsumerRecord<String, String> record(TopicPartition partition, long offset) {
    return new ConsumerRecord<>(partition.topic(), partition.partition(), offset, "k", "v");
  }
}
