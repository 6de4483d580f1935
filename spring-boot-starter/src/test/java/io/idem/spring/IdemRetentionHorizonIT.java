package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * The starter's own {@code RetentionJob} is built before the listeners are known; at start-up its
 * window ({@code idem.retention.retention}) is checked against the redelivery horizon of each
 * {@code @Idempotent} Kafka listener's topic ({@code retention.ms} + {@code segment.ms} + the
 * broker's retention check interval, read from the broker): a window that a marker could be
 * purged within, while its record can still be read again, fails start-up naming the topic; a
 * longer one starts. Real Kafka (in-JVM broker) and PostgreSQL; the containers are never started.
 */
class IdemRetentionHorizonIT {
  private static final String SCHEMA = "spring_horizon_" + Long.toHexString(System.nanoTime());
  private static final String TOPIC = "idem-horizon-" + UUID.randomUUID().toString().substring(0, 8);
  private static final ch.qos.logback.classic.Logger SPRING_CONTEXT =
      (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.springframework.context");
  private static ch.qos.logback.classic.Level contextLevel;

  @BeforeAll
  static void topicWithAShortRetention() throws Exception {
    PostgresFixture.shared().createSchema(SCHEMA);
    // retention.ms 1 h and segment.ms 1 h: a record can be read up to 2 h + the check interval later
    KafkaFixture.shared().createTopic(TOPIC, 1, Map.of("retention.ms", "3600000", "segment.ms", "3600000"));
    contextLevel = SPRING_CONTEXT.getLevel();
    SPRING_CONTEXT.setLevel(ch.qos.logback.classic.Level.ERROR);
  }

  @AfterAll
  static void cleanUp() throws Exception {
    SPRING_CONTEXT.setLevel(contextLevel);
    KafkaFixture.shared().admin().deleteTopics(List.of(TOPIC)).all().get(60, TimeUnit.SECONDS);
  }

  private static DataSource dataSource() {
    return PostgresFixture.shared().dataSource(SCHEMA, 2);
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withPropertyValues("spring.kafka.bootstrap-servers=" + KafkaFixture.shared().bootstrapServers(),
          "test.topic=" + TOPIC)
      .withConfiguration(BootLines.autoConfigurations(BootLines.DATA_SOURCE_TRANSACTION_MANAGER,
          BootLines.TRANSACTION, BootLines.KAFKA))
      .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
      .withBean("dataSource", DataSource.class, IdemRetentionHorizonIT::dataSource)
      .withBean(Billing.class);

  @Test
  void aRetentionWithinTheTopicsHorizonFailsStartUpNamingTheTopic() {
    runner.withPropertyValues("idem.retention.retention=2h").run(context -> assertThat(context).getFailure()
        .hasStackTraceContaining("idem.retention.retention does not outlive the redelivery")
        .hasStackTraceContaining("kafka topic " + TOPIC)
        .hasStackTraceContaining("retention.ms=3600000"));
  }

  @Test
  void aRetentionLongerThanTheHorizonStarts() {
    runner.withPropertyValues("idem.retention.retention=3h")
        .run(context -> assertThat(context).hasNotFailed());
  }

  static class Billing {
    @KafkaListener(topics = "${test.topic}", autoStartup = "false", groupId = "horizon")
    @Idempotent(consumerGroup = "billing")
    public void on(ConsumerRecord<String, String> record) {}
  }
}
