package io.idem.it;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.KafkaFixture;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;

/**
 * {@link DatabaseOutageTestBase} on Kafka. The consumer runs with {@code max.poll.interval.ms}
 * 3 s, well under the cut: had it stopped polling while the database was away, the group would
 * have evicted it and it would have rejoined as a new member (and its records would have been
 * revoked and fetched again). The group's members must be the same before and after.
 */
class KafkaDatabaseOutageIT extends DatabaseOutageTestBase {
  private static final int MAX_POLL_INTERVAL_MS = 3_000;

  @Override
  protected String brokerName() {
    return "kafka";
  }

  @Override
  protected BrokerConsumer consumer(IdempotentConsumer<?> pipeline) {
    return KafkaIdempotentConsumer.create(
        KafkaConsumerConfig.builder(KafkaFixture.shared().bootstrapServers(), destination)
            .consumerProperty("max.poll.interval.ms", MAX_POLL_INTERVAL_MS)
            .build(),
        pipeline);
  }

  /** Member ids and state of the consumer group. */
  @Override
  protected Object brokerSession() {
    try {
      ConsumerGroupDescription group = KafkaFixture.shared().admin()
          .describeConsumerGroups(List.of(this.group)).describedGroups().get(this.group)
          .get(30, TimeUnit.SECONDS);
      Set<String> members = new TreeSet<>();
      for (MemberDescription m : group.members()) {
        members.add(m.consumerId() + " " + m.assignment().topicPartitions().size() + " partitions");
      }
      return group.groupState() + " " + members;
    } catch (Exception e) {
      throw new IllegalStateException("could not describe group " + this.group + ": " + e, e);
    }
  }
}
