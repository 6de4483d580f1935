package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/**
 * The trace context across the outbox on the real PostgreSQL: the inbound traceparent is stored
 * with the row (V8) and handed to the publisher in the headers; MDC around the handler; the
 * idem.consume observation with a TestObservationRegistry.
 */
class OutboxTraceIT {
  private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  private HikariDataSource pool;
  private SqlSessionFactory sessions;

  @BeforeEach
  void setUp() {
    pool = StoreTests.pool(StoreTests.newSchema("outbox_trace"), "idem-outbox-trace-it", null, c -> c.setMaximumPoolSize(4));
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
  }

  @AfterEach
  void tearDown() {
    pool.close();
  }

  private IdempotentConsumer.Builder<SqlSession> pipeline(List<String> mdc) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    return IdempotentConsumer.builder(store).consumerGroup("billing")
        .handler((IdempotencyKey key, InboundMessage message, SqlSession session) -> {
          mdc.add(MDC.get("idem.consumerGroup") + "/" + MDC.get("idem.source") + "/" + MDC.get("idem.key"));
          Outbox.ofDefaults().enqueue(session, key, "receipts", message.payload(), Map.of());
        });
  }

  private static InboundMessage traced(String key) {
    return InboundMessage.builder("orders", key.getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).header("traceparent", TRACEPARENT).build();
  }

  @Test
  void theInboundTraceparentIsStoredWithTheRowAndPublishedAndTheMdcIsCleanAfter() throws Exception {
    List<String> mdc = new CopyOnWriteArrayList<>();
    IdempotentConsumer<SqlSession> consumer = pipeline(mdc).build();
    assertThat(consumer.process(traced("paid-1"), new RecordedAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.process(StoreTests.message("paid-2", "x", 1), new RecordedAcknowledgement()))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(mdc).containsExactly("billing/orders/paid-1", "billing/orders/paid-2");
    assertThat(MDC.get("idem.key")).isNull();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'paid-1'"
        + " AND traceparent = '" + TRACEPARENT + "'")).isEqualTo(1);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE traceparent IS NULL")).isEqualTo(1);
    OutboxRelayIT.RecordingPublisher publisher = new OutboxRelayIT.RecordingPublisher();
    assertThat(OutboxRelay.builder(sessions, publisher).build().relayOnce()).isEqualTo(2);
    assertThat(publisher.published).filteredOn(m -> m.idempotencyKey().equals("paid-1")).singleElement()
        .satisfies(m -> {
          assertThat(m.traceparent()).isEqualTo(TRACEPARENT);
          assertThat(m.headers()).containsEntry("traceparent", TRACEPARENT);
        });
    assertThat(publisher.published).filteredOn(m -> m.idempotencyKey().equals("paid-2")).singleElement()
        .satisfies(m -> assertThat(m.headers()).doesNotContainKey("traceparent"));
  }

  @Test
  void processingIsAnObservationWithTagsAndEvents() {
    TestObservationRegistry registry = TestObservationRegistry.create();
    IdempotentConsumer<SqlSession> consumer = pipeline(new CopyOnWriteArrayList<>()).observationRegistry(registry).build();
    assertThat(consumer.process(traced("paid-3"), new RecordedAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    TestObservationRegistryAssert.assertThat(registry).hasObservationWithNameEqualTo("idem.consume").that()
        .hasBeenStarted().hasBeenStopped()
        .hasLowCardinalityKeyValue("idem.consumer.group", "billing")
        .hasLowCardinalityKeyValue("idem.source", "orders")
        .hasLowCardinalityKeyValue("idem.outcome", "PROCESSED")
        .hasHighCardinalityKeyValue("idem.key", "paid-3");
    TestObservationRegistryAssert.assertThat(registry).hasObservationWithNameEqualTo("idem.outbox.enqueue");
  }
}
