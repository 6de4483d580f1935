package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * Batch mode ({@link KafkaConsumerConfig#maxBatchSize()} &gt; 1) on a real broker and PostgreSQL:
 * one transaction per partition's run of records; a failing record does not poison its batch (the
 * ones before it are applied once, it is retried and dead-lettered, the ones after it in its
 * partition wait behind it, the other partition goes on), and a batch handler writes a whole batch
 * with one multi-row statement.
 */
class KafkaBatchModeIT extends KafkaITSupport {

  @Override
  protected int partitions() {
    return 2;
  }

  @Test
  void aFailingRecordHoldsUpOnlyTheRestOfItsPartitionAndIsDeadLetteredWithItsReason() {
    List<String> p0 = List.of("a1", "a2", "a3", "bad", "a5", "a6", "a7");
    List<String> p1 = List.of("b1", "b2", "b3", "b4", "b5");
    p0.forEach(key -> publish(0, key, "{}"));
    p1.forEach(key -> publish(1, key, "{}"));
    List<String> events = Collections.synchronizedList(new ArrayList<>());
    IdempotencyListener log = new IdempotencyListener() {
      @Override
      public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
        events.add("committed " + key.value());
      }

      @Override
      public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
        events.add("dead-lettered " + keyOf(message));
      }
    };
    start(pipeline((message, session) -> {
      events.add("handled " + keyOf(message));
      if (keyOf(message).equals("bad")) {
        throw new IllegalStateException("cannot apply bad");
      }
      TestEffects.record(session, keyOf(message), message.payload());
    }, log), b -> b.maxBatchSize(50));

    awaitSettled();
    // the precondition: a2 and a3 shared a transaction with bad (handled in the batch, rolled back,
    // redone); not necessarily a1: the consumer's first run is a single record (BatchBudget), and
    // it is a1 when partition 0 comes first
    assertThat(events).filteredOn("handled a2"::equals).hasSizeGreaterThanOrEqualTo(2);
    assertThat(events).filteredOn("handled a3"::equals).hasSizeGreaterThanOrEqualTo(2);
    for (String key : List.of("a1", "a2", "a3", "a5", "a6", "a7", "b1", "b2", "b3", "b4", "b5")) {
      assertThat(effects.count(key)).as("effects of " + key).isEqualTo(1);
      assertThat(outcomes.count(key, ProcessingOutcome.PROCESSED)).as("outcome of " + key).isEqualTo(1);
    }
    assertThat(effects.count("bad")).isZero();
    assertThat(effects.doubled()).isZero();
    // partition order kept: the effects of partition 0 in offset order, bad left out
    assertThat(effects.keysInOrder()).filteredOn(k -> k.startsWith("a"))
        .containsExactly("a1", "a2", "a3", "a5", "a6", "a7");
    int deadLettered = events.indexOf("dead-lettered bad");
    assertThat(deadLettered).isPositive();
    // the records before bad were applied before it failed for good, the ones after it only after
    assertThat(events.indexOf("committed a3")).isLessThan(deadLettered);
    assertThat(events.indexOf("committed a5")).isGreaterThan(deadLettered);
    // the other partition did not wait for bad's retries
    for (String key : p1) {
      assertThat(events.indexOf("committed " + key)).as(key).isLessThan(deadLettered);
    }
    List<ConsumerRecord<byte[], byte[]>> dead = KafkaTestClients.readAll(deadLetterTopic);
    assertThat(dead).hasSize(1);
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_KEY)).isEqualTo("bad");
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_CAUSE)).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_ATTEMPT)).isEqualTo("3");
    assertThat(text(dead.get(0), DeadLetterReason.HEADER_DETAIL)).contains("cannot apply bad");
    assertThat(committed(0)).isEqualTo(p0.size());
    assertThat(committed(1)).isEqualTo(p1.size());
  }

  @Test
  void aBatchHandlerWritesEachBatchWithOneMultiRowStatement() {
    int keys = 60;
    for (int i = 0; i < keys; i++) {
      publish(0, "k-" + i, "{\"n\":" + i + "}");
      if (i % 10 == 0) {
        publish(0, "k-" + i, "{\"n\":" + i + "}"); // a redelivered copy right behind it, in the same batch
      }
    }
    List<Integer> sizes = Collections.synchronizedList(new ArrayList<>());
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .batchHandler((messages, session) -> {
          sizes.add(messages.size());
          TestEffects.recordAll(session, messages);
        })
        .retryPolicy(retryPolicy())
        .listener(outcomes)
        .build();
    start(pipeline, b -> b.maxBatchSize(20));

    awaitSettled();
    assertThat(effects.total()).isEqualTo(keys);
    assertThat(effects.distinctKeys()).isEqualTo(keys);
    assertThat(effects.doubled()).isZero();
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isEqualTo(keys / 10);
    // the handler got whole batches (never more than maxBatchSize, the copies left out)
    assertThat(sizes).allMatch(size -> size <= 20);
    assertThat(sizes.stream().mapToInt(Integer::intValue).max().orElse(0)).isGreaterThan(1);
    assertThat(sizes.stream().mapToInt(Integer::intValue).sum()).isEqualTo(keys);
  }

  private static String text(ConsumerRecord<byte[], byte[]> record, String header) {
    return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
  }
}
