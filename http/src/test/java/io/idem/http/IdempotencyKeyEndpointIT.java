package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import io.idem.spi.RedeliveryHorizon;
import io.idem.store.jdbc.RetentionJob;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Idempotency-Key endpoints on a real embedded Tomcat over real HTTP and the real PostgreSQL: the
 * stored first answer replayed byte for byte, 409 while in flight, 422 for another request, keys
 * scoped per client, failures that leave the key usable, bad input answered 4xx with nothing
 * written, retention by the store's RetentionJob.
 */
class IdempotencyKeyEndpointIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static HttpTests.Db db;
  private static HttpTests.Server server;
  private static final AtomicInteger handlerRuns = new AtomicInteger();
  /** When set, the handler waits on it after its insert (holding the claim's transaction). */
  private static volatile CountDownLatch hold;
  private static volatile CountDownLatch entered;

  @BeforeAll
  static void start() {
    db = new HttpTests.Db("http_key_it");
    IdempotencyKeyEndpoint<SqlSession> endpoint = IdempotencyKeyEndpoint.builder(db.store, db.responses)
        .consumerGroup("orders-api")
        .clientResolver(ClientResolver.header("X-Client"))
        .maxBodyBytes(4096)
        .maxResponseBytes(2048)
        .retryPolicy(RetryPolicy.builder().initialBackoff(Duration.ofSeconds(2)).jitter(0).build())
        .build();
    IdempotencyKeyEndpoint<SqlSession> optional = IdempotencyKeyEndpoint.builder(db.store, db.responses)
        .consumerGroup("orders-api")
        .keyRequired(false)
        .clientResolver(ClientResolver.header("X-Client"))
        .build();
    server = new HttpTests.Server()
        .servlet("/orders", endpoint.servlet(IdempotencyKeyEndpointIT::createOrder))
        .servlet("/other", endpoint.servlet(IdempotencyKeyEndpointIT::createOrder))
        .servlet("/optional", optional.servlet(IdempotencyKeyEndpointIT::createOrder))
        .start();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    db.close();
  }

  /** {"amount": n, "fail": "throw" | "nonretryable" | "answer503" | "big" | "reject"}. */
  private static void createOrder(jakarta.servlet.http.HttpServletRequest request,
      jakarta.servlet.http.HttpServletResponse response, SqlSession session) throws Exception {
    handlerRuns.incrementAndGet();
    JsonNode body = JSON.readTree(request.getInputStream());
    String client = request.getHeader("X-Client");
    long id = HttpTests.insertOrder(session, client == null ? "-" : client, body.path("amount").asInt());
    CountDownLatch entering = entered;
    CountDownLatch waiting = hold;
    if (entering != null) {
      entering.countDown();
    }
    if (waiting != null) {
      waiting.await(30, TimeUnit.SECONDS);
    }
    switch (body.path("fail").asText("")) {
      case "throw" -> throw new IllegalStateException("the ledger is closed for the night");
      case "nonretryable" -> throw new NonRetryableException("amount not allowed");
      case "answer503" -> {
        response.setStatus(503);
        response.getWriter().write("busy");
        return;
      }
      case "reject" -> {
        response.setStatus(402);
        response.setContentType("application/json");
        response.getWriter().write("{\"error\":\"payment required\",\"id\":" + id + "}");
        return;
      }
      case "big" -> {
        response.getOutputStream().write(new byte[4096]);
        return;
      }
      default -> { }
    }
    response.setStatus(201);
    response.setContentType("application/json;charset=UTF-8");
    response.setHeader("Location", "/orders/" + id);
    response.setHeader("X-Request-Id", UUID.randomUUID().toString()); // not stored: first answer only
    response.getWriter().write("{\"id\":" + id + ",\"amount\":" + body.path("amount").asInt()
        + ",\"nonce\":\"" + UUID.randomUUID() + "\"}");
  }

  private static String key() {
    return UUID.randomUUID().toString();
  }

  private static long orders(String client) {
    return db.count("SELECT count(*) FROM orders WHERE client = '" + client + "'");
  }

  @Test
  void aRepeatGetsTheStoredFirstAnswerByteForByteAndTheEffectOnce() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> first = post(server.uri("/orders"), "{\"amount\":42}",
        "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> second = post(server.uri("/orders"), "{\"amount\":42}",
        "Idempotency-Key", key, "X-Client", client);

    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(first.headers().firstValue("X-Request-Id")).isPresent();
    assertThat(first.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).isEmpty();
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.body()).isEqualTo(first.body()); // the nonce too: not run again
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(second.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
    assertThat(second.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(second.headers().firstValue("X-Request-Id")).isEmpty();
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void aQuotedStructuredFieldKeyIsTheSameKeyAsTheBareOne() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> bare = post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> quoted = post(server.uri("/orders"), "{\"amount\":1}",
        "Idempotency-Key", "\"" + key + "\"", "X-Client", client);
    assertThat(quoted.body()).isEqualTo(bare.body());
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void theSameKeyWithAnotherBodyOrPathIs422AndNotApplied() {
    String key = key();
    String client = "c-" + key;
    post(server.uri("/orders"), "{\"amount\":5}", "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> otherBody = post(server.uri("/orders"), "{\"amount\":6}",
        "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> otherPath = post(server.uri("/other"), "{\"amount\":5}",
        "Idempotency-Key", key, "X-Client", client);

    assertThat(otherBody.statusCode()).isEqualTo(422);
    assertThat(otherBody.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(text(otherBody)).contains("idempotency-key-reused");
    assertThat(otherPath.statusCode()).isEqualTo(422);
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void keysAreScopedPerClientSoOneClientNeverGetsAnothersAnswer() {
    String key = key();
    HttpResponse<byte[]> a = post(server.uri("/orders"), "{\"amount\":7}", "Idempotency-Key", key, "X-Client", "alice-" + key);
    HttpResponse<byte[]> b = post(server.uri("/orders"), "{\"amount\":7}", "Idempotency-Key", key, "X-Client", "bob-" + key);
    HttpResponse<byte[]> aAgain = post(server.uri("/orders"), "{\"amount\":7}", "Idempotency-Key", key, "X-Client", "alice-" + key);

    assertThat(a.statusCode()).isEqualTo(201);
    assertThat(b.statusCode()).isEqualTo(201);
    assertThat(b.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).isEmpty();
    assertThat(b.body()).isNotEqualTo(a.body());
    assertThat(aAgain.body()).isEqualTo(a.body());
    assertThat(orders("alice-" + key)).isEqualTo(1);
    assertThat(orders("bob-" + key)).isEqualTo(1);
    // a client id that looks like a scoped key cannot reach another scope either
    HttpResponse<byte[]> sneaky = post(server.uri("/orders"), "{\"amount\":7}",
        "Idempotency-Key", "bob-" + key + ":" + key, "X-Client", "alice");
    assertThat(sneaky.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).isEmpty();
  }

  @Test
  void aScopedKeyOver512CharactersIsStoredHashedAndStillReplayed() {
    String key = "k".repeat(250) + UUID.randomUUID().toString().substring(0, 5);
    String client = "tenant-" + "t".repeat(300) + UUID.randomUUID();
    HttpResponse<byte[]> first = post(server.uri("/orders"), "{\"amount\":4}", "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> second = post(server.uri("/orders"), "{\"amount\":4}", "Idempotency-Key", key, "X-Client", client);
    assertThat(first.statusCode()).isEqualTo(201);
    assertThat(second.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void withoutAClientIdentityTheRequestIs401AndNothingIsWritten() {
    long before = db.written();
    HttpResponse<byte[]> response = post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", key());
    assertThat(response.statusCode()).isEqualTo(401);
    assertThat(text(response)).contains("no-client");
    assertThat(db.written()).isEqualTo(before);
  }

  @Test
  void aRepeatWhileTheFirstIsInFlightIs409AtOnceAndTheRetryAfterTheCommitIsReplayed() throws Exception {
    String key = key();
    String client = "c-" + key;
    hold = new CountDownLatch(1);
    entered = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      Future<HttpResponse<byte[]>> first = pool.submit(() ->
          post(server.uri("/orders"), "{\"amount\":9}", "Idempotency-Key", key, "X-Client", client));
      assertThat(entered.await(30, TimeUnit.SECONDS)).as("the first request reached its handler").isTrue();
      entered = null;
      // the first holds its claim (handler blocked): every repeat is answered 409 without waiting
      List<Future<HttpResponse<byte[]>>> repeats = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        repeats.add(pool.submit(() ->
            post(server.uri("/orders"), "{\"amount\":9}", "Idempotency-Key", key, "X-Client", client)));
      }
      for (Future<HttpResponse<byte[]>> repeat : repeats) {
        HttpResponse<byte[]> answer = repeat.get(30, TimeUnit.SECONDS);
        assertThat(answer.statusCode()).isEqualTo(409);
        assertThat(answer.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(text(answer)).contains("request-in-flight");
      }
      assertThat(first.isDone()).as("the 409s came while the first was still in flight").isFalse();
      hold.countDown();
      HttpResponse<byte[]> firstAnswer = first.get(30, TimeUnit.SECONDS);
      assertThat(firstAnswer.statusCode()).isEqualTo(201);
      HttpResponse<byte[]> after = post(server.uri("/orders"), "{\"amount\":9}",
          "Idempotency-Key", key, "X-Client", client);
      assertThat(after.body()).isEqualTo(firstAnswer.body());
      assertThat(orders(client)).isEqualTo(1);
    } finally {
      hold = null;
      entered = null;
      pool.shutdownNow();
    }
  }

  @Test
  void manyClientsRacingOneKeyApplyItOnceAndEachGets409OrTheReplay() throws Exception {
    String key = key();
    String client = "c-" + key;
    int racers = 12;
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
      for (int i = 0; i < racers; i++) {
        answers.add(pool.submit(() -> {
          go.await();
          return post(server.uri("/orders"), "{\"amount\":3}", "Idempotency-Key", key, "X-Client", client);
        }));
      }
      go.countDown();
      List<HttpResponse<byte[]>> created = new ArrayList<>();
      int conflicts = 0;
      for (Future<HttpResponse<byte[]>> answer : answers) {
        HttpResponse<byte[]> response = answer.get(60, TimeUnit.SECONDS);
        if (response.statusCode() == 409) {
          conflicts++;
        } else {
          assertThat(response.statusCode()).as(text(response)).isEqualTo(201);
          created.add(response);
        }
      }
      assertThat(orders(client)).isEqualTo(1);
      assertThat(created).isNotEmpty();
      assertThat(created).allSatisfy(r -> assertThat(r.body()).isEqualTo(created.get(0).body()));
      assertThat(created.size() + conflicts).isEqualTo(racers);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aHandlerThatThrowsIs500AndTheKeyStaysUsable() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> failed = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"throw\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(failed.headers().firstValue("Retry-After")).hasValue("2");
    assertThat(text(failed)).contains("handler-failed").contains("the ledger is closed");
    assertThat(orders(client)).isZero();

    // a retry of the same operation (same key, same request) is applied once the handler succeeds:
    // the same key with another body would be a new operation under a used key
    int runs = handlerRuns.get();
    HttpResponse<byte[]> again = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"throw\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(again.statusCode()).isEqualTo(500);
    assertThat(handlerRuns.get()).as("the handler ran again: nothing was stored").isEqualTo(runs + 1);
  }

  @Test
  void aNonRetryableFailureIs500WithoutRetryAfterAndDoesNotBurnTheKey() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> failed = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"nonretryable\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(failed.statusCode()).isEqualTo(500);
    assertThat(failed.headers().firstValue("Retry-After")).isEmpty();
    int runs = handlerRuns.get();
    HttpResponse<byte[]> again = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"nonretryable\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(again.statusCode()).isEqualTo(500);
    assertThat(handlerRuns.get()).as("the dead-letter decision of the first request is released by the next").isEqualTo(runs + 1);
    assertThat(orders(client)).isZero();
  }

  @Test
  void aHandlerAnswering5xxIsAFailureItsAnswerPassedOnNothingStored() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> busy = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"answer503\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(busy.statusCode()).isEqualTo(503);
    assertThat(text(busy)).isEqualTo("busy");
    assertThat(orders(client)).isZero();
    assertThat(db.count("SELECT count(*) FROM idem_processed_events WHERE response_status IS NOT NULL"
        + " AND idempotency_key LIKE '%" + key + "'")).isZero();
  }

  @Test
  void aHandlers4xxAnswerIsAResultStoredAndReplayed() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> first = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"reject\"}",
        "Idempotency-Key", key, "X-Client", client);
    HttpResponse<byte[]> second = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"reject\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(first.statusCode()).isEqualTo(402);
    assertThat(second.statusCode()).isEqualTo(402);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(orders(client)).isEqualTo(1);
  }

  @Test
  void anAnswerOverTheStoredLimitFailsTheRequestRolledBack() {
    String key = key();
    String client = "c-" + key;
    HttpResponse<byte[]> big = post(server.uri("/orders"), "{\"amount\":2,\"fail\":\"big\"}",
        "Idempotency-Key", key, "X-Client", client);
    assertThat(big.statusCode()).isEqualTo(500);
    assertThat(text(big)).contains("maxResponseBytes");
    assertThat(orders(client)).isZero();
  }

  @Test
  void badInputIsA4xxProblemAndNothingIsWritten() {
    long before = db.written();
    String client = "bad-" + key();
    HttpResponse<byte[]> missing = post(server.uri("/orders"), "{\"amount\":1}", "X-Client", client);
    HttpResponse<byte[]> malformedJson = post(server.uri("/orders"), "{\"amount\":",
        "Idempotency-Key", key(), "X-Client", client);
    HttpResponse<byte[]> tooLong = post(server.uri("/orders"), "{\"amount\":1}",
        "Idempotency-Key", "k".repeat(256), "X-Client", client);
    HttpResponse<byte[]> badQuoting = post(server.uri("/orders"), "{\"amount\":1}",
        "Idempotency-Key", "\"unterminated", "X-Client", client);
    HttpResponse<byte[]> twice = post(server.uri("/orders"), "{\"amount\":1}",
        "Idempotency-Key", key(), "Idempotency-Key", key(), "X-Client", client);
    HttpResponse<byte[]> overLimit = post(server.uri("/orders"), "{\"note\":\"" + "x".repeat(5000) + "\"}",
        "Idempotency-Key", key(), "X-Client", client);

    assertProblem(missing, 400, "missing-idempotency-key");
    assertProblem(malformedJson, 400, "malformed-json");
    assertProblem(tooLong, 400, "invalid-idempotency-key");
    assertThat(text(tooLong)).contains("maxKeyLength");
    assertProblem(badQuoting, 400, "invalid-idempotency-key");
    assertProblem(twice, 400, "invalid-idempotency-key");
    assertProblem(overLimit, 413, "body-too-large");
    assertThat(db.written()).isEqualTo(before);
  }

  private static void assertProblem(HttpResponse<byte[]> response, int status, String name) {
    assertThat(response.statusCode()).as(text(response)).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(text(response)).contains("\"status\":" + status).contains(name);
  }

  @Test
  void anOptionalKeyEndpointRunsAKeylessRequestInAPlainTransactionStoringNothing() {
    String client = "opt-" + key();
    HttpResponse<byte[]> one = post(server.uri("/optional"), "{\"amount\":1}", "X-Client", client);
    HttpResponse<byte[]> two = post(server.uri("/optional"), "{\"amount\":1}", "X-Client", client);
    assertThat(one.statusCode()).isEqualTo(201);
    assertThat(two.statusCode()).isEqualTo(201);
    assertThat(two.body()).isNotEqualTo(one.body());
    assertThat(orders(client)).isEqualTo(2);
    String key = key();
    post(server.uri("/optional"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    post(server.uri("/optional"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    assertThat(orders(client)).isEqualTo(3);
  }

  @Test
  void responsesOnAnotherProcessedEventsTableThanTheStoresAreRefused() {
    JdbcStoredResponses elsewhere = JdbcStoredResponses.builder(db.dataSource)
        .processedEventsTable("other_processed_events").verifyTable(false).build();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> IdempotencyKeyEndpoint.builder(db.store, elsewhere).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("other_processed_events").hasMessageContaining("idem_processed_events");
  }

  @Test
  void aResponseStoredBeforeTheResponseColumnsIsStillReplayedByteForByte() {
    String key = key();
    String client = "old-" + key;
    HttpResponse<byte[]> first = post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    String where = " WHERE consumer_group = 'orders-api' AND idempotency_key = '" + client + ":" + key + "'";
    movedToTheOldTable(where);

    HttpResponse<byte[]> second = post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(second.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(orders(client)).isEqualTo(1);
  }

  /** The key's stored response as a release before V9 stored it: a row of idem_http_responses. */
  private static void movedToTheOldTable(String where) {
    db.update("INSERT INTO idem_http_responses (consumer_group, idempotency_key, status, headers, body)"
        + " SELECT consumer_group, idempotency_key, response_status, response_headers, response_body"
        + " FROM idem_processed_events" + where);
    db.update("UPDATE idem_processed_events SET response_status = NULL, response_headers = NULL,"
        + " response_body = NULL" + where);
  }

  @Test
  void theRetentionJobPurgesStoredResponsesWithTheirMarkers() {
    String key = key();
    String client = "ret-" + key;
    post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", key, "X-Client", client);
    String where = " WHERE consumer_group = 'orders-api' AND idempotency_key = '" + client + ":" + key + "'";
    assertThat(db.count("SELECT count(*) FROM idem_processed_events" + where + " AND response_status = 201"))
        .isEqualTo(1);
    String oldKey = key();
    post(server.uri("/orders"), "{\"amount\":1}", "Idempotency-Key", oldKey, "X-Client", client);
    String oldWhere = " WHERE consumer_group = 'orders-api' AND idempotency_key = '" + client + ":" + oldKey + "'";
    movedToTheOldTable(oldWhere);
    assertThat(db.count("SELECT count(*) FROM idem_http_responses" + oldWhere)).isEqualTo(1);

    Duration retryWindow = Duration.ofHours(24);
    RetentionJob job = RetentionJob.builder(db.store)
        .retention(Duration.ofDays(2))
        .redeliveryHorizon(RedeliveryHorizon.declared("orders-api", retryWindow, "clients retry for 24 h"))
        .clock(Clock.fixed(Instant.now().plus(Duration.ofDays(3)), ZoneOffset.UTC))
        .build();
    job.purgeExpired();

    assertThat(db.count("SELECT count(*) FROM idem_processed_events" + where)).isZero();
    assertThat(db.count("SELECT count(*) FROM idem_processed_events" + oldWhere)).isZero();
    assertThat(db.count("SELECT count(*) FROM idem_http_responses" + oldWhere)).as("deleted with its marker").isZero();
  }

  @Test
  void aRetentionWindowShorterThanTheClientsRetryWindowIsRefused() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> RetentionJob.builder(db.store)
            .retention(Duration.ofHours(1))
            .redeliveryHorizon(RedeliveryHorizon.declared("orders-api", Duration.ofHours(24), "clients retry for 24 h"))
            .build())
        .isInstanceOf(IllegalStateException.class);
  }
}
