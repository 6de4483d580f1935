package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Idempotency-Key handlers that misbehave, on the 3-round-trip path (the stored response sent
 * with the COMMIT, the claim's lock timeout restored in the claim's round trip), on the real
 * PostgreSQL over real HTTP: whatever the handler does, the client never gets a 2xx before the
 * commit, and nothing is half stored.
 */
class IdempotencyKeyMisbehavingHandlerIT {
  private static HttpTests.Db db;
  private static HttpTests.Server server;
  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  private static final java.util.Map<String, java.util.concurrent.atomic.AtomicInteger> RUNS =
      new java.util.concurrent.ConcurrentHashMap<>();

  @BeforeAll
  static void start() {
    db = new HttpTests.Db("http_misbehaving_it");
    // a deferred constraint trigger: fires at the COMMIT, after the stored response's INSERT sent
    // with it, and fails the first `fails` commits of a row with SQLSTATE `code`
    db.update("CREATE TABLE tripwire (code text NOT NULL, fails int NOT NULL, seq text NOT NULL)");
    db.update("CREATE FUNCTION tripwire_fire() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        + " IF nextval(NEW.seq::regclass) > NEW.fails THEN RETURN NULL; END IF;"
        + " IF NEW.code = 'die' THEN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END IF;"
        + " RAISE EXCEPTION 'tripwire at the commit' USING ERRCODE = NEW.code; END $$");
    db.update("CREATE CONSTRAINT TRIGGER tripwire_at_commit AFTER INSERT ON tripwire"
        + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION tripwire_fire()");
    IdempotencyKeyEndpoint<SqlSession> endpoint = IdempotencyKeyEndpoint.builder(db.store, db.responses)
        .consumerGroup("orders-api")
        .clientResolver(ClientResolver.header("X-Client"))
        .maxResponseBytes(2048)
        .build();
    server = new HttpTests.Server()
        .servlet("/orders", endpoint.servlet(IdempotencyKeyMisbehavingHandlerIT::createOrder))
        .start();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    db.close();
  }

  /** The body (a JSON string) names what the handler does after inserting its order. */
  private static void createOrder(jakarta.servlet.http.HttpServletRequest request,
      jakarta.servlet.http.HttpServletResponse response, SqlSession session) throws Exception {
    String what = JSON.readTree(request.getInputStream()).asText();
    String client = request.getHeader("X-Client");
    RUNS.computeIfAbsent(client, c -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet();
    long id = HttpTests.insertOrder(session, client, 1);
    String note = "";
    try (Statement s = session.getConnection().createStatement()) {
      switch (what.split(":")[0]) {
        case "timeouts" -> {
          s.execute("SET LOCAL lock_timeout = '7s'");
          s.execute("SET LOCAL statement_timeout = '9s'");
          try (ResultSet row = s.executeQuery("SELECT current_setting('lock_timeout')")) {
            row.next();
            note = row.getString(1);
          }
        }
        case "sql-commit" -> s.execute("COMMIT");
        case "sql-rollback" -> s.execute("ROLLBACK");
        case "sql-commit-begin" -> s.execute("COMMIT; BEGIN");
        case "read-only" -> s.execute("SET TRANSACTION READ ONLY"); // the stored response's INSERT fails
        case "trip" -> {
          String[] trip = what.split(":");
          s.execute("INSERT INTO tripwire VALUES ('" + trip[1] + "', " + trip[2] + ", '" + trip[3] + "')");
        }
        case "throw-after-body" -> {
          response.setStatus(201);
          response.getWriter().write("{\"id\":" + id + "}");
          response.flushBuffer();
          throw new IllegalStateException("failed after writing the answer");
        }
        case "exactly-the-limit" -> {
          response.setStatus(201);
          response.getOutputStream().write(new byte[2048]);
          return;
        }
        default -> { }
      }
    }
    response.setStatus(201);
    response.getWriter().write("{\"id\":" + id + ",\"note\":\"" + note + "\"}");
  }

  private static HttpResponse<byte[]> send(String client, String what) {
    return post(server.uri("/orders"), "\"" + what + "\"", "Idempotency-Key", client.substring(2), "X-Client", client);
  }

  private static String client() {
    return "c-" + UUID.randomUUID();
  }

  private static long orders(String client) {
    return db.count("SELECT count(*) FROM orders WHERE client = '" + client + "'");
  }

  private static long markers(String client) {
    return db.count("SELECT count(*) FROM idem_processed_events WHERE idempotency_key LIKE '" + client + ":%'");
  }

  private static long responses(String client) {
    return db.count("SELECT count(*) FROM idem_processed_events WHERE response_status IS NOT NULL"
        + " AND idempotency_key LIKE '" + client + ":%'");
  }

  private static int runs(String client) {
    return RUNS.getOrDefault(client, new java.util.concurrent.atomic.AtomicInteger()).get();
  }

  /** Sends {@code what} twice with one key: a 201, then the same bytes replayed; returns the first. */
  private static HttpResponse<byte[]> createdAndReplayed(String client, String what) {
    HttpResponse<byte[]> first = send(client, what);
    assertThat(first.statusCode()).as(text(first)).isEqualTo(201);
    HttpResponse<byte[]> replay = send(client, what);
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(replay.body()).isEqualTo(first.body());
    return first;
  }

  /** The client's orders, markers and stored responses. */
  private static void assertRows(String client, long orders, long markers, long responses) {
    assertThat(List.of(orders(client), markers(client), responses(client))).as("orders, markers, responses")
        .containsExactly(orders, markers, responses);
  }

  /** A sequence of the client's own, counting its tripwire's commits. */
  private static String tripwire(String client) {
    String seq = "trip_" + client.substring(2, 10);
    db.update("CREATE SEQUENCE " + seq);
    return seq;
  }

  @Test
  void aHandlersOwnLockAndStatementTimeoutsAreItsOwnAndTheAnswerCommitsWithTheWork() {
    String client = client();
    HttpResponse<byte[]> first = createdAndReplayed(client, "timeouts");
    assertThat(text(first)).contains("\"note\":\"7s\"");
    assertThat(runs(client)).isEqualTo(1);
    assertRows(client, 1, 1, 1);
  }

  @Test
  void aStoredResponseInsertThatFailsWithTheCommitCommitsNothing() {
    String client = client();
    HttpResponse<byte[]> failed = send(client, "read-only");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).contains("handler-failed").contains("read-only transaction");
    assertRows(client, 0, 0, 0);
  }

  @Test
  void aSerializationFailureAtTheCommitRunsTheRequestAgainAndStoresOneAnswer() {
    String client = client();
    String seq = tripwire(client);
    createdAndReplayed(client, "trip:40001:1:" + seq);
    assertThat(runs(client)).as("run again in the server after the COMMIT's 40001, not for the replay").isEqualTo(2);
    assertRows(client, 1, 1, 1);
  }

  @Test
  void aFailureAtTheCommitAfterTheStoredResponseLeavesNoAnswerStored() {
    String client = client();
    String seq = tripwire(client);
    HttpResponse<byte[]> failed = send(client, "trip:23514:1:" + seq);
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).contains("tripwire at the commit");
    assertThat(List.of(orders(client), responses(client))).containsExactly(0L, 0L);
    // the key stays usable: the next request with it runs the handler again and commits
    HttpResponse<byte[]> again = send(client, "trip:23514:1:" + seq);
    assertThat(again.statusCode()).as(text(again)).isEqualTo(201);
    assertRows(client, 1, 1, 1);
  }

  @Test
  void aHandlerEndingTheTransactionBySqlIsA500WithNoMarkerAndNoAnswerStored() {
    String committed = client();
    HttpResponse<byte[]> commit = send(committed, "sql-commit");
    assertThat(commit.statusCode()).isEqualTo(500);
    assertThat(text(commit)).contains("ended Idem's transaction").contains("stays committed")
        .doesNotContain("nothing was applied");
    // the order the handler committed itself stays (docs/FAILURES.md): the marker does not
    assertRows(committed, 1, 0, 0);

    String rolledBack = client();
    HttpResponse<byte[]> rollback = send(rolledBack, "sql-rollback");
    assertThat(rollback.statusCode()).isEqualTo(500);
    assertRows(rolledBack, 0, 0, 0);
  }

  @Test
  void aHandlerCommittingAndBeginningAnewIsCaughtByTheCommitCheck() {
    String client = client();
    HttpResponse<byte[]> failed = send(client, "sql-commit-begin");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).contains("not the one that claimed the key").contains("stays committed")
        .doesNotContain("nothing was applied");
    assertRows(client, 1, 0, 0);
  }

  @Test
  void aConnectionDyingAtTheCommitIsA500AndTheRetryCommitsOnce() {
    String client = client();
    String what = "trip:die:1:" + tripwire(client);
    HttpResponse<byte[]> failed = send(client, what);
    assertThat(failed.statusCode()).isEqualTo(500);
    assertRows(client, 0, 0, 0);
    createdAndReplayed(client, what);
    assertRows(client, 1, 1, 1);
  }

  @Test
  void aHandlerThrowingAfterWritingItsAnswerIsA500AndNothingIsStored() {
    String client = client();
    HttpResponse<byte[]> failed = send(client, "throw-after-body");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).contains("failed after writing the answer").doesNotContain("{\"id\"");
    assertRows(client, 0, 0, 0);
  }

  @Test
  void anAnswerOfExactlyMaxResponseBytesIsStoredAndReplayed() {
    String client = client();
    assertThat(createdAndReplayed(client, "exactly-the-limit").body()).hasSize(2048);
    assertRows(client, 1, 1, 1);
  }
}
