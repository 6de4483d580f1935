package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What attempt accounting costs (docs/FAILURES.md, "Attempts that survive the process"), counted
 * like {@link RoundTripsIT} from pgjdbc's own protocol log: a first delivery pays nothing (the
 * three round trips of RoundTripsIT, no statement on the attempts table); a delivery flagged as an
 * unaccounted redelivery pays the count's upsert and its COMMIT before the handler, and the
 * count's DELETE inside the message's transaction.
 */
class AttemptRoundTripsIT {
  private static PooledDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    String schema = StoreTests.newSchema("attempt_round_trips");
    PostgresFixture postgres = PostgresFixture.shared();
    String url = postgres.jdbcUrl();
    pool = new PooledDataSource("org.postgresql.Driver",
        url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema, postgres.user(), postgres.password());
    StoreTests.execute(pool, "CREATE TABLE effects (k text PRIMARY KEY)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    pool.forceCloseAll();
  }

  private static InboundMessage delivery(String key, boolean unaccounted) {
    return InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).deliveryAttempt(unaccounted ? 2 : 1)
        .unaccountedRedelivery(unaccounted).build();
  }

  private static long roundTripsOf(IdempotentConsumer<SqlSession> pipeline, InboundMessage message,
      List<String> sentOut) {
    List<ProcessingOutcome> outcome = new ArrayList<>();
    List<String> sent = RoundTripsIT.frontendMessages(() -> outcome.add(
        pipeline.process(message, new RecordedAcknowledgement())));
    assertThat(outcome).containsExactly(ProcessingOutcome.PROCESSED);
    sentOut.addAll(sent);
    return RoundTripsIT.roundTrips(sent);
  }

  @Test
  void aFirstDeliveryPaysNothingAndAFlaggedRedeliveryPaysThreeRoundTrips() {
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {
      try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
        ps.setString(1, message.header("idempotency-key"));
        ps.executeUpdate();
      }
    }, false);
    pipeline.process(delivery("warm-" + UUID.randomUUID(), true), new RecordedAcknowledgement());

    List<String> first = new ArrayList<>();
    assertThat(roundTripsOf(pipeline, delivery("first-" + UUID.randomUUID(), false), first))
        .as("a first delivery: %s", first).isEqualTo(3);
    assertThat(RoundTripsIT.queries(first)).noneMatch(q -> q.contains("_attempts"));

    String key = "again-" + UUID.randomUUID();
    List<String> flagged = new ArrayList<>();
    long trips = roundTripsOf(pipeline, delivery(key, true), flagged);
    LoggerFactory.getLogger(AttemptRoundTripsIT.class).info("a flagged redelivery sent: {}", flagged);
    assertThat(trips).as("a flagged redelivery: %s", flagged).isEqualTo(3 + 3);
    assertThat(RoundTripsIT.queries(flagged)).anyMatch(q -> q.contains("attempts = t.attempts + 1"))
        .anyMatch(q -> q.contains("DELETE FROM") && q.contains("_attempts"));
    assertThat(store.attempts(new IdempotencyKey("classify", key, KeySource.HEADER))).isZero();
  }
}
