package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A store outage is retried through {@code retryWhenStoreAvailable}, which does not count as a
 * delivery attempt: with {@code maxAttempts(2)} and an outage lasting many more retries, the
 * record's first real run after the outage is still attempt 1, so one handler failure after it
 * is retried (attempt 2) and applied instead of being dead-lettered for attempts the outage used.
 */
class StoreOutageDoesNotUseUpDeliveryAttemptsIT extends KafkaITSupport {

  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build();
  }

  @Test
  void recordComesBackWithItsAttemptAfterAnOutageOfManyRetries() throws Exception {
    List<Integer> handlerAttempts = new CopyOnWriteArrayList<>();
    start((message, session) -> {
      handlerAttempts.add(message.deliveryAttempt());
      TestEffects.record(session, keyOf(message), message.payload());
      if (handlerAttempts.size() == 1) {
        throw new IllegalStateException("the first real run fails once");
      }
    }, b -> b);

    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    publish(0, "held-1", "{}");
    await("several store retries, more than maxAttempts").atMost(TIMEOUT)
        .until(() -> outcomes.count("held-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= 5);
    assertThat(handlerAttempts).isEmpty();
    assertThat(committed(0)).as("nothing past the record (0: the mark made at assignment)").isZero();

    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> effects.count("held-1") == 1);
    awaitSettled();
    assertThat(handlerAttempts).containsExactly(1, 2);
    assertThat(outcomes.count("held-1", ProcessingOutcome.DEAD_LETTERED)).isZero();
    assertThat(outcomes.count("held-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(KafkaTestClients.readAll(deadLetterTopic)).isEmpty();
  }

  private void sql(String statement) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
