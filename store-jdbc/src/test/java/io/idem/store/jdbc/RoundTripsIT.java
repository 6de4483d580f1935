package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PgjdbcRoundTrips;
import io.idem.fixtures.PostgresFixture;
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
 * The round trips of the success and duplicate paths, counted from the messages pgjdbc sends (its
 * own FINEST protocol log, {@code FE=>} lines, on the pipeline's thread): every {@code Sync} ends
 * one round trip (the driver waits for the server's {@code ReadyForQuery} before it sends more). A new message must
 * cost the claim, the handler's statement and one round trip for the claim check and COMMIT; a
 * duplicate the claim and the COMMIT. No isolation statement, no confirming query.
 *
 * <p>MyBatis' own pool (no ping configured) so that no pool validation query is counted.
 */
class RoundTripsIT {
  private static PooledDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    String schema = StoreTests.newSchema("round_trips");
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

  /** The frontend messages pgjdbc sends on this thread while {@code action} runs ({@link PgjdbcRoundTrips}). */
  static List<String> frontendMessages(Runnable action) {
    return PgjdbcRoundTrips.frontendMessages(action);
  }

  /** Round trips: one per {@code Sync} ({@link PgjdbcRoundTrips#roundTrips}). */
  static long roundTrips(List<String> sent) {
    return PgjdbcRoundTrips.roundTrips(sent);
  }

  static List<String> queries(List<String> sent) {
    return PgjdbcRoundTrips.queries(sent);
  }

  @Test
  void aNewMessageCostsTheClaimTheHandlersStatementAndOneRoundTripForCheckAndCommit() {
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {
      try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
        ps.setString(1, message.header("idempotency-key"));
        ps.executeUpdate();
      }
    }, false);
    pipeline.process(StoreTests.message("warm-" + UUID.randomUUID(), "{}", 1), new RecordedAcknowledgement());
    String key = "new-" + UUID.randomUUID();
    List<ProcessingOutcome> outcome = new ArrayList<>();
    List<String> sent = frontendMessages(() -> outcome.add(
        pipeline.process(StoreTests.message(key, "{}", 1), new RecordedAcknowledgement())));
    LoggerFactory.getLogger(RoundTripsIT.class).info("a new message sent: {}", sent);
    assertThat(outcome).containsExactly(ProcessingOutcome.PROCESSED);
    assertThat(roundTrips(sent)).as("round trips of %s", sent).isEqualTo(3);
    List<String> queries = queries(sent);
    assertThat(queries).as("no isolation statement, no confirming query")
        .noneMatch(q -> q.contains("SET SESSION") || q.contains("SELECT EXISTS"));
    assertThat(queries).anyMatch(q -> q.contains("WITH ins AS"));
    assertThat(queries).anyMatch(q -> q.contains("INSERT INTO effects"));
    assertThat(queries).anyMatch(q -> q.contains("txid_current_if_assigned"));
    assertThat(queries.get(queries.size() - 1)).contains("COMMIT");
    // the last round trip holds the check and the COMMIT together
    int lastSync = sent.lastIndexOf("FE=> Sync");
    int previousSync = sent.subList(0, lastSync).lastIndexOf("FE=> Sync");
    assertThat(sent.subList(previousSync + 1, lastSync))
        .anyMatch(m -> m.contains("txid_current_if_assigned"))
        .anyMatch(m -> m.contains("query=\"COMMIT\"") || m.contains("COMMIT"));
  }

  /** A batch of {@code n} new messages with a per-message handler: claimAll, n INSERTs, check+COMMIT. */
  @Test
  void aBatchOfNewMessagesCostsOneClaimTheHandlersStatementsAndOneCommit() {
    // its own statement text: pgjdbc prepares a statement run 5 times on the server and then
    // sends no Parse for it, which the single-message test looks for
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {
      try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects (k) VALUES (?)")) {
        ps.setString(1, message.header("idempotency-key"));
        ps.executeUpdate();
      }
    }, false);
    int n = 10;
    List<io.idem.InboundMessage> batch = new ArrayList<>();
    List<io.idem.spi.Acknowledgement> acks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(StoreTests.message("batch-" + UUID.randomUUID(), "{}", 1));
      acks.add(new RecordedAcknowledgement());
    }
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    List<String> sent = frontendMessages(() -> outcomes.addAll(pipeline.processBatch(batch, acks)));
    LoggerFactory.getLogger(RoundTripsIT.class).info("a batch of {} new messages sent: {}", n, sent);
    assertThat(outcomes).hasSize(n).containsOnly(ProcessingOutcome.PROCESSED);
    assertThat(roundTrips(sent)).as("round trips of %s", sent).isEqualTo(n + 2);
    assertThat(queries(sent)).filteredOn(q -> q.contains("WITH input AS")).hasSize(1);
  }

  /** The same batch with a batch handler writing one multi-row INSERT: 3 round trips, whatever n. */
  @Test
  void aBatchWithABatchHandlerCostsThreeRoundTrips() {
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup("classify")
        .batchHandler((news, session) -> {
          try (PreparedStatement ps = session.getConnection()
              .prepareStatement("INSERT INTO effects SELECT unnest(?::text[])")) {
            ps.setArray(1, session.getConnection().createArrayOf("text",
                news.stream().map(k -> k.key().value()).toArray()));
            ps.executeUpdate();
          }
        }).build();
    int n = 50;
    List<io.idem.InboundMessage> batch = new ArrayList<>();
    List<io.idem.spi.Acknowledgement> acks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(StoreTests.message("bh-" + UUID.randomUUID(), "{}", 1));
      acks.add(new RecordedAcknowledgement());
    }
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    List<String> sent = frontendMessages(() -> outcomes.addAll(pipeline.processBatch(batch, acks)));
    assertThat(outcomes).hasSize(n).containsOnly(ProcessingOutcome.PROCESSED);
    assertThat(roundTrips(sent)).as("round trips of %s", sent).isEqualTo(3);
    // the same keys again: all duplicates, the claim and the COMMIT
    List<String> again = frontendMessages(() -> outcomes.addAll(pipeline.processBatch(batch, acks)));
    assertThat(outcomes.subList(n, 2 * n)).containsOnly(ProcessingOutcome.DUPLICATE);
    assertThat(roundTrips(again)).as("round trips of %s", again).isEqualTo(2);
  }

  @Test
  void aDuplicateCostsTheClaimAndTheCommit() {
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {}, false);
    String key = "dup-" + UUID.randomUUID();
    assertThat(pipeline.process(StoreTests.message(key, "{}", 1), new RecordedAcknowledgement()))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    List<ProcessingOutcome> outcome = new ArrayList<>();
    List<String> sent = frontendMessages(() -> outcome.add(
        pipeline.process(StoreTests.message(key, "{}", 1), new RecordedAcknowledgement())));
    LoggerFactory.getLogger(RoundTripsIT.class).info("a duplicate sent: {}", sent);
    assertThat(outcome).containsExactly(ProcessingOutcome.DUPLICATE);
    assertThat(roundTrips(sent)).as("round trips of %s", sent).isEqualTo(2);
    assertThat(queries(sent)).noneMatch(q -> q.contains("SET SESSION") || q.contains("SELECT EXISTS")
        || q.contains("SELECT payload_sha256 FROM")); // no second read of the fingerprint
  }
}
