package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import io.idem.store.jdbc.Dialect;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Idempotency-Key endpoint on MariaDB (InnoDB), over real HTTP on an embedded Tomcat: the
 * stored-response table made by the MariaDB migration, the first answer replayed byte for byte,
 * 422 for another request, 409 while the first is in flight (MariaDB's lock wait is whole seconds:
 * the claim's 1 ms is 1 s there), a failure leaving the key usable, and the response deleted with
 * its marker (ON DELETE CASCADE).
 */
class MariaDbIdempotencyKeyEndpointIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static HikariDataSource dataSource;
  private static JdbcStoredResponses responses;
  private static HttpTests.Server server;
  private static final HttpTests.Gate gate = new HttpTests.Gate();
  private static final java.util.concurrent.atomic.AtomicBoolean loseTheClaim =
      new java.util.concurrent.atomic.AtomicBoolean();
  private static final java.util.concurrent.atomic.AtomicReference<HttpResponse<byte[]>> overtaken =
      new java.util.concurrent.atomic.AtomicReference<>();

  @BeforeAll
  static void start() throws SQLException {
    dataSource = MariaDbFixture.shared().newDatabase("http_maria_it");
    var sessions = HttpTests.Db.sessionsOn(dataSource);
    MyBatisProcessedEventStore store = JdbcStoredResponses.processedEventStore(sessions)
        .createTableIfMissing(true).build();
    responses = JdbcStoredResponses.builder(sessions).createTableIfMissing(true).build();
    update("CREATE TABLE orders (id bigint AUTO_INCREMENT PRIMARY KEY, client varchar(600),"
        + " amount integer NOT NULL, note text) ENGINE = InnoDB");
    IdempotencyKeyEndpoint<SqlSession> endpoint = IdempotencyKeyEndpoint.builder(store, responses)
        .consumerGroup("orders-api")
        .clientResolver(ClientResolver.header("X-Client"))
        .build();
    server = new HttpTests.Server()
        .servlet("/orders", endpoint.servlet(MariaDbIdempotencyKeyEndpointIT::createOrder))
        .start();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    dataSource.close();
  }

  private static void update(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static long count(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rows = s.executeQuery(sql)) {
      rows.next();
      return rows.getLong(1);
    }
  }

  /** {"amount": n, "fail": "throw"}; held at the {@link #gate} when it is closed. */
  private static void createOrder(jakarta.servlet.http.HttpServletRequest request,
      jakarta.servlet.http.HttpServletResponse response, SqlSession session) throws Exception {
    JsonNode body = JSON.readTree(request.getInputStream());
    long id = HttpTests.insertOrder(session, request.getHeader("X-Client"), body.path("amount").asInt());
    gate.pass();
    if (body.path("fail").asText("").equals("lose-the-claim") && loseTheClaim.compareAndSet(true, false)) {
      try (Statement s = session.getConnection().createStatement()) {
        s.execute("ROLLBACK"); // the claim and the order are gone, as after a swallowed deadlock (1213)
      }
      // the same request again, while this one still runs: it claims the key anew and commits
      overtaken.set(order(request.getHeader("Idempotency-Key"), request.getHeader("X-Client"),
          "{\"amount\":" + body.path("amount").asInt() + ",\"fail\":\"lose-the-claim\"}"));
      id = HttpTests.insertOrder(session, request.getHeader("X-Client"), body.path("amount").asInt());
    }
    if (body.path("fail").asText("").equals("commit-then-throw")) {
      try (Statement s = session.getConnection().createStatement()) {
        s.execute("COMMIT"); // not detected on MariaDB (docs/STORE.md, "Databases")
      }
      throw new IllegalStateException("failed after its own COMMIT");
    }
    if (body.path("fail").asText("").equals("throw")) {
      throw new IllegalStateException("the ledger is closed for the night");
    }
    response.setStatus(201);
    response.setContentType("application/json;charset=UTF-8");
    response.setHeader("Location", "/orders/" + id);
    response.getWriter().write("{\"id\":" + id + ",\"nonce\":\"" + UUID.randomUUID() + "\"}");
  }

  private static HttpResponse<byte[]> order(String key, String client, String body) {
    return post(server.uri("/orders"), body, "Idempotency-Key", key, "X-Client", client);
  }

  private static long orders(String client) throws SQLException {
    return count("SELECT count(*) FROM orders WHERE client = '" + client + "'");
  }

  @Test
  void theStoredResponsesAreMariaDbs() {
    assertThat(responses.dialect()).isEqualTo(Dialect.MARIADB);
  }

  @Test
  void aRepeatGetsTheStoredFirstAnswerByteForByteAndTheEffectOnce() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    HttpResponse<byte[]> first = order(key, client, "{\"amount\":42}");
    HttpResponse<byte[]> second = order(key, client, "{\"amount\":42}");
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(second.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(orders(client)).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_processed_events WHERE response_status = 201 AND idempotency_key = '"
        + IdempotencyKeyEndpoint.scoped(client, key) + "'")).isEqualTo(1);
  }

  @Test
  void theSameKeyWithAnotherBodyIs422AndNotApplied() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    assertThat(order(key, client, "{\"amount\":5}").statusCode()).isEqualTo(201);
    HttpResponse<byte[]> other = order(key, client, "{\"amount\":6}");
    assertThat(other.statusCode()).isEqualTo(422);
    assertThat(text(other)).contains("idempotency-key-reused");
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void aRepeatWhileTheFirstIsInFlightIs409AndTheFirstIsNotDisturbed() throws Exception {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    gate.close();
    CompletableFuture<HttpResponse<byte[]>> first;
    try {
      first = CompletableFuture.supplyAsync(() -> order(key, client, "{\"amount\":9}"));
      assertThat(gate.awaitHeld()).isTrue();
      HttpResponse<byte[]> repeat = order(key, client, "{\"amount\":9}");
      assertThat(repeat.statusCode()).isEqualTo(409);
      assertThat(text(repeat)).contains("request-in-flight");
      assertThat(repeat.headers().firstValue("Retry-After")).hasValue("1");
    } finally {
      gate.open();
    }
    HttpResponse<byte[]> answered = first.get(30, TimeUnit.SECONDS);
    assertThat(answered.statusCode()).isEqualTo(201);
    assertThat(order(key, client, "{\"amount\":9}").body()).isEqualTo(answered.body());
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void aFailedRequestStoresNothingAndItsRetryIsApplied() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    HttpResponse<byte[]> failed = order(key, client, "{\"amount\":3,\"fail\":\"throw\"}");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(text(failed)).contains("handler-failed");
    assertThat(orders(client)).isZero();
    assertThat(count("SELECT count(*) FROM idem_processed_events WHERE response_status IS NOT NULL AND idempotency_key = '"
        + IdempotencyKeyEndpoint.scoped(client, key) + "'")).isZero();
    // nothing is left of the failed request: the key is free, the next request with it is applied
    HttpResponse<byte[]> retried = order(key, client, "{\"amount\":3}");
    assertThat(retried.statusCode()).isEqualTo(201);
    assertThat(orders(client)).isEqualTo(1);
  }

  /**
   * The limitation docs/HTTP.md states for MariaDB: a handler that commits by SQL text and then
   * fails leaves its order and the marker committed, no response stored; every retry with the
   * key is then a 500 {@code stored-response-missing} (not the handler run again).
   */
  @Test
  void aHandlerCommittingBySqlTextThenFailingLeavesTheKeyProcessedWithoutAResponse() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    HttpResponse<byte[]> failed = order(key, client, "{\"amount\":3,\"fail\":\"commit-then-throw\"}");
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(orders(client)).as("committed by the handler itself").isEqualTo(1);
    HttpResponse<byte[]> retried = order(key, client, "{\"amount\":3,\"fail\":\"commit-then-throw\"}");
    assertThat(retried.statusCode()).isEqualTo(500);
    assertThat(text(retried)).contains("stored-response-missing");
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void aResponseStoredBeforeTheResponseColumnsIsReplayedByteForByteAndDeletedWithItsMarker() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    HttpResponse<byte[]> first = order(key, client, "{\"amount\":1}");
    assertThat(first.statusCode()).isEqualTo(201);
    String scoped = IdempotencyKeyEndpoint.scoped(client, key);
    String where = " WHERE consumer_group = 'orders-api' AND idempotency_key = '" + scoped + "'";
    // as a release before V9 stored it: a row of idem_http_responses, none in the marker
    update("INSERT INTO idem_http_responses (consumer_group, idempotency_key, status, headers, body)"
        + " SELECT consumer_group, idempotency_key, response_status, response_headers, response_body"
        + " FROM idem_processed_events" + where);
    update("UPDATE idem_processed_events SET response_status = NULL, response_headers = NULL,"
        + " response_body = NULL" + where);

    HttpResponse<byte[]> second = order(key, client, "{\"amount\":1}");
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(orders(client)).isEqualTo(1);

    update("DELETE FROM idem_processed_events" + where);
    assertThat(count("SELECT count(*) FROM idem_http_responses" + where)).isZero();
  }

  /**
   * A handler whose claim is lost mid-way (rolled back: here by SQL text, as InnoDB does on a
   * swallowed deadlock) while the same request, sent again, claims the key, runs and commits: the
   * first one's response finds no marker of its transaction without a response, so it commits
   * nothing and answers no 2xx; the key keeps the second one's response and its one order.
   */
  @Test
  void aResponseWhoseClaimWasLostToAnotherRequestCommitsNothing() throws SQLException {
    String key = UUID.randomUUID().toString();
    String client = "c-" + key;
    loseTheClaim.set(true);
    HttpResponse<byte[]> first = order(key, client, "{\"amount\":9,\"fail\":\"lose-the-claim\"}");
    HttpResponse<byte[]> second = overtaken.getAndSet(null);
    assertThat(second).isNotNull();
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(first.statusCode()).as(text(first)).isGreaterThanOrEqualTo(500);
    assertThat(orders(client)).isEqualTo(1);
    HttpResponse<byte[]> replay = order(key, client, "{\"amount\":9,\"fail\":\"lose-the-claim\"}");
    assertThat(replay.statusCode()).isEqualTo(201);
    assertThat(replay.body()).isEqualTo(second.body());
  }

}
