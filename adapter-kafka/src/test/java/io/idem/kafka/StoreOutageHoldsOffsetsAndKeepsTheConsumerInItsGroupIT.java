package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * While the processed-events store is unavailable (its table renamed away on the real
 * PostgreSQL, so every claim fails), records are retried with backoff — never dead-lettered,
 * never committed — and the consumer stays in its group although the outage outlasts
 * {@code max.poll.interval.ms} several times. Once the store is back, everything is applied once.
 */
class StoreOutageHoldsOffsetsAndKeepsTheConsumerInItsGroupIT extends KafkaITSupport {

  @Override
  protected int partitions() {
    return 2;
  }

  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(200))
        .maxBackoff(Duration.ofSeconds(1)).multiplier(2.0).jitter(0).build();
  }

  @Test
  void storeOutageRetriesWithoutCommittingOrDeadLettering() throws Exception {
    start(recording(), b -> b.consumerProperty("max.poll.interval.ms", 1000));
    for (int i = 0; i < 10; i++) {
      publish(i % 2, "before-" + i, "{}");
    }
    awaitSettled();
    Set<String> members = members();

    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    for (int i = 0; i < 10; i++) {
      publish(i % 2, "during-" + i, "{}");
    }
    await("retries during the outage").atMost(TIMEOUT).until(() -> outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= 6);
    await("outage outlasts max.poll.interval.ms").during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(6))
        .untilAsserted(() -> {
          assertThat(lag()).isEqualTo(10);
          assertThat(effects.total()).isEqualTo(10);
        });
    assertThat(outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isZero();

    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> effects.total() == 20);
    awaitSettled();
    assertThat(effects.doubled()).isZero();
    assertThat(KafkaTestClients.readAll(deadLetterTopic)).isEmpty();
    assertThat(members()).isEqualTo(members);
  }

  private void sql(String statement) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private Set<String> members() throws Exception {
    return KafkaTestClients.members(group);
  }
}
