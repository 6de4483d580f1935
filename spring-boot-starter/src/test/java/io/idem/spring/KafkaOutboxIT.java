package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.test.util.ReflectionTestUtils;

/**
 * The outbox in the starter ({@link KafkaDropInApp}): an {@code @Idempotent} listener enqueues a
 * receipt with {@link IdemOutbox} in Idem's transaction; the relay the starter built from {@code
 * idem.outbox.*} with the application's Kafka producer settings, started with the context,
 * publishes it once per order, keyed by the order's idempotency key — also when the order is
 * delivered twice, and not at all for an order whose handler failed and rolled back; its health
 * indicator is UP with the relay's stats.
 */
class KafkaOutboxIT extends KafkaDropInApp {
  @Autowired Receipts receipts;
  @Autowired IdemOutboxRelay relay;
  @Autowired @Qualifier("idemOutboxRelayHealthIndicator") Object health;

  @Override
  public void send(String key, String body) {
    send(ORDERS, key, json(key, body), true);
  }

  @Test
  void aReceiptIsPublishedOncePerOrderAfterTheCommitAndNeverForARolledBackOne() {
    String key = "k-" + UUID.randomUUID();
    String failed = "k-" + UUID.randomUUID();
    send(key, "order 1");
    send(key, "order 1");
    send(failed, "poison 2");

    await().atMost(WAIT).until(() -> receipts.published().containsKey(key)
        && outcomes.of(key).contains(ProcessingOutcome.DUPLICATE)
        && deadLetters.of(failed) != null);
    assertThat(receipts.published()).containsEntry(key, "receipt for order 1");
    assertThat(receipts.published()).doesNotContainKey(failed);
    assertThat(relay.isRunning()).isTrue();
    Object reading = ReflectionTestUtils.invokeMethod(health, "health");
    Object status = ReflectionTestUtils.invokeMethod(reading, "getStatus");
    assertThat((String) ReflectionTestUtils.invokeMethod(status, "getCode")).isEqualTo("UP");
    @SuppressWarnings("unchecked")
    Map<String, Object> details = (Map<String, Object>) ReflectionTestUtils.invokeMethod(reading, "getDetails");
    assertThat(details).containsEntry("running", true).containsEntry("status", "UP")
        .containsKeys("backlog", "oldestUnsentAge", "parked", "lastPublishAt", "lastCycleAt", "consecutiveDatabaseFailures");
  }

  /** {@code idem.outbox.relay.batch-size} unset: the relay's own default for the Kafka publisher. */
  @Test
  void theRelayTakesItsPublishersDefaultBatchSizeWhenNoneIsSet() {
    assertThat(relay.relay().batchSize()).isEqualTo(io.idem.store.jdbc.OutboxRelay.DEFAULT_PUBLISH_ALL_BATCH_SIZE);
  }

}
