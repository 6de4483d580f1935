package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.PgjdbcRoundTrips;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The round trips to PostgreSQL of one Idempotency-Key request, counted from the messages pgjdbc
 * sends on the server thread that serves it ({@link PgjdbcRoundTrips}: one per {@code Sync}), on
 * MyBatis' own pool (no validation query): a new key costs 3 — the claim (its lock timeout saved,
 * set and restored in the same round trip), the handler's INSERT, and the stored response's INSERT
 * with the commit check and the COMMIT — as many as a plain JDBC transaction plus the claim.
 */
class IdempotencyKeyRoundTripsIT {
  private static PooledDataSource pool;
  private static HttpTests.Server server;
  private static final AtomicLong handlerThread = new AtomicLong();
  private static final AtomicReference<String> handlerLockTimeout = new AtomicReference<>();

  @BeforeAll
  static void start() throws SQLException {
    String schema = ("http_round_trips_" + UUID.randomUUID().toString().substring(0, 8)).toLowerCase(Locale.ROOT)
        .replace('-', '_');
    PostgresFixture postgres = PostgresFixture.shared();
    postgres.createSchema(schema);
    String url = postgres.jdbcUrl();
    pool = new PooledDataSource("org.postgresql.Driver", url + (url.contains("?") ? "&" : "?")
        + "currentSchema=" + schema + "&options=-c%20lock_timeout=5s", postgres.user(), postgres.password());
    SqlSessionFactory sessions = HttpTests.Db.sessionsOn(pool);
    MyBatisProcessedEventStore store = JdbcStoredResponses.processedEventStore(sessions)
        .createTableIfMissing(true).build();
    JdbcStoredResponses responses = JdbcStoredResponses.builder(sessions).createTableIfMissing(true).build();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE orders (id bigserial PRIMARY KEY, client text, amount integer NOT NULL, note text)");
    }
    IdempotencyKeyEndpoint<SqlSession> endpoint = IdempotencyKeyEndpoint.builder(store, responses)
        .consumerGroup("orders-api").clientResolver(ClientResolver.header("X-Client")).build();
    server = new HttpTests.Server().servlet("/orders", endpoint.servlet((request, response, session) -> {
      handlerThread.set(Thread.currentThread().getId());
      if (request.getHeader("X-Show-Lock-Timeout") != null) {
        try (Statement s = session.getConnection().createStatement();
            java.sql.ResultSet row = s.executeQuery("SHOW lock_timeout")) {
          row.next();
          handlerLockTimeout.set(row.getString(1));
        }
      }
      long id = HttpTests.insertOrder(session, request.getHeader("X-Client"), 1);
      response.setStatus(201);
      response.setContentType("application/json");
      response.getWriter().write("{\"id\":" + id + "}");
    })).start();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    pool.forceCloseAll();
  }

  private static HttpResponse<byte[]> order(String key, String... headers) {
    String[] all = new String[headers.length + 4];
    all[0] = "Idempotency-Key";
    all[1] = key;
    all[2] = "X-Client";
    all[3] = "c1";
    System.arraycopy(headers, 0, all, 4, headers.length);
    return post(server.uri("/orders"), "{\"amount\":1}", all);
  }

  /** The messages of the one thread that sent any while {@code request} ran (the serving thread). */
  private static List<String> servingThread(List<PgjdbcRoundTrips.Sent> sent) {
    Set<Long> threads = sent.stream().map(PgjdbcRoundTrips.Sent::thread).collect(Collectors.toSet());
    assertThat(threads).as("threads that talked to PostgreSQL: %s", sent).hasSize(1);
    return PgjdbcRoundTrips.ofThread(sent, threads.iterator().next());
  }

  @Test
  void aNewKeyCostsThreeRoundTripsAndAReplayTheClaimTheCommitAndTheRead() {
    assertThat(order("warm-" + UUID.randomUUID(), "X-Show-Lock-Timeout", "1").statusCode()).isEqualTo(201);
    assertThat(handlerLockTimeout.get()).as("the handler's lock_timeout: the connection's, not the claim's 1 ms")
        .isEqualTo("5s");
    String key = "new-" + UUID.randomUUID();
    AtomicReference<HttpResponse<byte[]>> first = new AtomicReference<>();
    List<PgjdbcRoundTrips.Sent> all = PgjdbcRoundTrips.frontendMessagesOfAllThreads(() -> first.set(order(key)));
    assertThat(first.get().statusCode()).isEqualTo(201);
    List<String> sent = servingThread(all);
    assertThat(all).allMatch(m -> m.thread() == handlerThread.get());
    List<List<String>> trips = PgjdbcRoundTrips.byRoundTrip(sent);
    // the claim; the handler's INSERT; the response, the check and the COMMIT
    assertThat(PgjdbcRoundTrips.roundTrips(sent)).as("round trips of %s", sent).isEqualTo(3);
    assertThat(String.join("\n", trips.get(0))).as("the claim's round trip: %s", trips.get(0))
        .contains("BEGIN").contains("WITH ins AS").contains("idem.lock_timeout_before_claim");
    assertThat(String.join("\n", trips.get(1))).contains("INSERT INTO orders");
    assertThat(String.join("\n", trips.get(2))).as("the COMMIT's round trip: %s", trips.get(2))
        .contains("UPDATE idem_processed_events SET response_status").contains("txid_current_if_assigned").contains("COMMIT");
    assertThat(PgjdbcRoundTrips.queries(sent)).as("no lock-timeout reset of its own")
        .noneMatch(q -> q.contains("SET LOCAL lock_timeout"));

    List<PgjdbcRoundTrips.Sent> again = PgjdbcRoundTrips.frontendMessagesOfAllThreads(() -> {
      HttpResponse<byte[]> replay = order(key);
      assertThat(replay.statusCode()).isEqualTo(201);
      assertThat(text(replay)).isEqualTo(text(first.get()));
    });
    List<String> replayed = servingThread(again);
    // the claim (a duplicate), its COMMIT, the stored response read on a connection of its own
    assertThat(PgjdbcRoundTrips.roundTrips(replayed)).as("round trips of %s", replayed).isEqualTo(3);
  }
}
