package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.RedeliveryHorizon.Horizon;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link KafkaRedeliveryHorizon} reads real topics, and a {@link RetentionJob} checks its window against them. */
class KafkaRedeliveryHorizonIT {
  private final List<String> topics = new ArrayList<>();
  private HikariDataSource dataSource;
  private MyBatisProcessedEventStore store;

  @BeforeEach
  void setUp() {
    dataSource = PostgresFixture.shared().newSchema("kafka_horizon");
    store = MyBatisProcessedEventStore.builder(KafkaITSupport.sessions(dataSource)).createTableIfMissing(true).build();
  }

  @AfterEach
  void tearDown() {
    topics.forEach(t -> KafkaTestClients.kafka().deleteTopic(t));
    dataSource.close();
  }

  private String topic(Map<String, String> configs) {
    String topic = KafkaTestClients.uniqueTopic("horizon");
    KafkaTestClients.kafka().createTopic(topic, 1, configs);
    topics.add(topic);
    return topic;
  }

  /**
   * Issue 23, case 4: a record lives up to retention.ms + segment.ms + the broker's
   * log.retention.check.interval.ms (a segment is deleted only once its newest record is older than
   * retention.ms, the active segment rolls at segment.ms, the deletion runs every check interval),
   * so a window equal to retention.ms alone — accepted before — is refused, and so is one equal to
   * the whole horizon.
   */
  @Test
  void theHorizonIsRetentionPlusSegmentPlusTheCheckIntervalAndTheWindowMustBeLonger() {
    String topic = topic(Map.of("retention.ms", "20000"));
    KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.admin(), topic);

    Horizon read = horizon.read();
    long checkMs = checkIntervalMs(read);
    Duration expected = Duration.ofMillis(20_000 + Duration.ofDays(7).toMillis() + checkMs);
    assertThat(read.bound()).isEqualTo(expected);
    assertThat(read.basis()).contains("retention.ms=20000").contains("segment.ms=604800000")
        .doesNotContain("not readable") // read from the broker, not the fallback
        .contains("offsets.retention.minutes=");
    for (Duration window : List.of(Duration.ofSeconds(20), expected)) {
      assertThatThrownBy(() -> RetentionJob.builder(store).retention(window).redeliveryHorizon(horizon).build())
          .as("window %s", window)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("retention window " + window + " is not longer than the redelivery horizon "
              + expected + " of kafka topic " + topic)
          .hasMessageContaining("segment.ms=604800000");
    }
    assertThat(RetentionJob.builder(store).retention(expected.plusMillis(1)).redeliveryHorizon(horizon).build()
        .horizons()).containsExactly(read);
  }

  @Test
  void aShortSegmentMsShortensTheHorizon() {
    String topic = topic(Map.of("retention.ms", "20000", "segment.ms", "10000"));
    Horizon read = KafkaRedeliveryHorizon.of(KafkaTestClients.bootstrap(), topic).read();
    assertThat(read.bound()).isEqualTo(Duration.ofMillis(30_000 + checkIntervalMs(read)));
  }

  /** Kafka's default topic settings (7-day retention.ms and segment.ms) pass the default window. */
  @Test
  void theDefaultWindowPassesAgainstKafkasDefaultTopicSettings() {
    String topic = topic(Map.of());
    KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.admin(), topic);
    Horizon read = horizon.read();
    assertThat(read.basis()).contains("retention.ms=604800000").contains("segment.ms=604800000");
    assertThat(read.bound()).isEqualTo(Duration.ofDays(14).plusMillis(checkIntervalMs(read)));

    RetentionJob job = RetentionJob.builder(store).redeliveryHorizon(horizon).build();
    assertThat(job.retention()).isEqualTo(RetentionJob.DEFAULT_RETENTION).isGreaterThan(read.bound());
  }

  @Test
  void aTopicsRetentionIsInItsHorizonAndAShorterWindowIsRefused() {
    String topic = topic(Map.of("retention.ms", String.valueOf(Duration.ofDays(10).toMillis())));
    KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.admin(), topic);

    Horizon read = horizon.read();
    Duration expected = Duration.ofDays(17).plusMillis(checkIntervalMs(read));
    assertThat(read.bound()).isEqualTo(expected);
    assertThat(read.basis()).contains("retention.ms=864000000");
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(horizon).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT360H is not longer than the redelivery horizon " + expected
            + " of kafka topic " + topic)
        .hasMessageContaining("retention(PT432H)");
    assertThat(RetentionJob.builder(store).retention(Duration.ofDays(18)).redeliveryHorizon(horizon).build()
        .horizons()).containsExactly(read);
  }

  /** The broker's log.retention.check.interval.ms as the basis reports it (read from the broker, or Kafka's default). */
  private static long checkIntervalMs(Horizon read) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("log\\.retention\\.check\\.interval\\.ms=(\\d+)")
        .matcher(read.basis());
    assertThat(m.find()).as(read.basis()).isTrue();
    return Long.parseLong(m.group(1));
  }

  @Test
  void infiniteRetentionAndCompactionAreUnboundedAndNeedTheOption() {
    for (Map<String, String> configs : List.of(Map.of("retention.ms", "-1"), Map.of("cleanup.policy", "compact"))) {
      String topic = topic(configs);
      KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.bootstrap(), topic);

      assertThat(horizon.read().bound()).as("%s", configs).isNull();
      assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(horizon).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("kafka topic " + topic + " is unbounded")
          .hasMessageContaining("acceptReplaysBeyondWindow(true)");
      assertThat(RetentionJob.builder(store).redeliveryHorizon(horizon).acceptReplaysBeyondWindow(true).build()
          .horizons()).hasSize(1);
    }
  }

  @Test
  void aMissingTopicIsAClearStartUpError() {
    KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.admin(), "no-such-topic-horizon");
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(horizon).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("could not be read")
        .hasMessageContaining("kafka topic no-such-topic-horizon");
  }
}
