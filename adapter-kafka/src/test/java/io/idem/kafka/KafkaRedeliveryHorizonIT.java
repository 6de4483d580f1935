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

  @Test
  void aTopicsRetentionIsItsHorizonAndAShorterWindowIsRefused() {
    String topic = topic(Map.of("retention.ms", String.valueOf(Duration.ofDays(10).toMillis())));
    KafkaRedeliveryHorizon horizon = KafkaRedeliveryHorizon.of(KafkaTestClients.admin(), topic);

    Horizon read = horizon.read();
    assertThat(read.bound()).isEqualTo(Duration.ofDays(10));
    assertThat(read.basis()).contains("retention.ms=864000000").contains("offsets.retention.minutes=");
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(horizon).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT168H is shorter than the redelivery horizon PT240H"
            + " of kafka topic " + topic)
        .hasMessageContaining("retention(PT240H)");
    assertThat(RetentionJob.builder(store).retention(Duration.ofDays(10)).redeliveryHorizon(horizon).build()
        .horizons()).containsExactly(read);
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
