package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A poll error that polling again cannot heal stops the consumer: one ERROR naming the cause and
 * the fix, {@code isRunning()} false, {@code health()} not ready, {@code failure()} the cause —
 * instead of (before) an ERROR and a new poll every second for as long as the process ran.
 * Authorization failures need an authorizer on the broker; they are covered by {@code
 * PollFailuresTest}.
 */
class PollErrorsThatCannotHealStopTheConsumerIT extends KafkaITSupport {
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private Logger logger;

  @BeforeEach
  void captureLogs() {
    logger = (Logger) LoggerFactory.getLogger(KafkaIdempotentConsumer.class);
    logs.start();
    logger.addAppender(logs);
  }

  @AfterEach
  void releaseLogs() {
    logger.detachAppender(logs);
  }

  @Test
  void aNewGroupWithAutoOffsetResetNoneStops() {
    publish(0, "k-1", "{}");
    AtomicInteger runs = new AtomicInteger();
    KafkaIdempotentConsumer consumer = start((message, session) -> runs.incrementAndGet(),
        b -> b.consumerProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"));

    awaitStopped(consumer);
    assertThat(consumer.failure()).containsInstanceOf(NoOffsetForPartitionException.class);
    assertThat(runs).hasValue(0);
    assertOneErrorSaying("auto.offset.reset is none", "--reset-offsets");
  }

  @Test
  void aCommittedOffsetBelowTheLogStartWithAutoOffsetResetNoneStops() throws Exception {
    for (int i = 0; i < 3; i++) {
      publish(0, "k-" + i, "{}");
    }
    TopicPartition partition = new TopicPartition(topic, 0);
    // the group committed offset 1, then retention removed everything before offset 3
    KafkaTestClients.admin().alterConsumerGroupOffsets(group, Map.of(partition, new OffsetAndMetadata(1)))
        .all().get(30, TimeUnit.SECONDS);
    KafkaTestClients.admin().deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(3)))
        .all().get(30, TimeUnit.SECONDS);
    publish(0, "k-3", "{}");
    AtomicInteger runs = new AtomicInteger();
    KafkaIdempotentConsumer consumer = start((message, session) -> runs.incrementAndGet(),
        b -> b.consumerProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"));

    awaitStopped(consumer);
    assertThat(consumer.failure()).containsInstanceOf(OffsetOutOfRangeException.class);
    assertThat(runs).hasValue(0);
    assertThat(committed(0)).isEqualTo(1); // nothing skipped behind the operator's back
    assertOneErrorSaying("auto.offset.reset is none", topic + "-0");
  }

  @Test
  void aStaticMemberFencedByAnotherWithTheSameInstanceIdStops() {
    String instance = "instance-" + group;
    KafkaIdempotentConsumer first = start(recording(),
        b -> b.consumerProperty(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance));
    await("first member assigned").atMost(TIMEOUT)
        .until(() -> first.health().consuming().contains(topic + "-0"));

    KafkaIdempotentConsumer second = start(recording(),
        b -> b.consumerProperty(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance));

    awaitStopped(first);
    assertThat(first.failure()).containsInstanceOf(FencedInstanceIdException.class);
    assertOneErrorSaying("same group.instance.id");
    // the member that replaced it consumes
    publish(0, "after-fence", "{}");
    await("applied by the second member").atMost(TIMEOUT).until(() -> effects.count("after-fence") == 1);
    assertThat(second.isRunning()).isTrue();
  }

  private static void awaitStopped(KafkaIdempotentConsumer consumer) {
    await("consumer stopped by the poll error").atMost(TIMEOUT).pollInterval(Duration.ofMillis(50))
        .until(() -> !consumer.isRunning());
    assertThat(consumer.health().isReady()).isFalse();
    assertThat(consumer.health().running()).isFalse();
    assertThat(consumer.health().connected()).isFalse();
  }

  private void assertOneErrorSaying(String... parts) {
    List<ILoggingEvent> errors = logs.list.stream()
        .filter(e -> e.getLevel() == Level.ERROR)
        .filter(e -> e.getFormattedMessage().contains("group " + group))
        .toList();
    assertThat(errors).as("ERROR events of group %s", group).hasSize(1);
    assertThat(errors.get(0).getFormattedMessage()).contains(parts).contains("cannot heal");
  }
}
