package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;

import io.idem.http.internal.StripeSignature;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
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
 * Webhook receivers on a real embedded Tomcat over real HTTP and the real PostgreSQL: each sender's
 * scheme end to end (Stripe, GitHub's documented example, the Standard Webhooks vector), a
 * redelivery answered 2xx without the handler, concurrent duplicates applied once, a failure
 * answered 5xx and applied on the redelivery, and bad input refused before anything is written.
 */
class WebhookEndpointIT {
  private static final String STRIPE_SECRET = "whsec_it_current";
  private static final String STRIPE_OLD_SECRET = "whsec_it_previous";
  private static HttpTests.Db db;
  private static HttpTests.Server server;
  private static final AtomicInteger runs = new AtomicInteger();
  private static volatile boolean failing;
  private static volatile CountDownLatch slow;
  private static volatile int holder;

  @BeforeAll
  static void start() {
    db = new HttpTests.Db("http_hook_it");
    db.update("CREATE TABLE payments (event_id text, amount integer)");
    WebhookHandler<SqlSession> record = (event, session) -> {
      runs.incrementAndGet();
      CountDownLatch wait = slow;
      if (wait != null) {
        try (var s = session.getConnection().createStatement();
            var rows = s.executeQuery("SELECT pg_backend_pid()")) {
          rows.next();
          holder = rows.getInt(1);
        }
        wait.await(30, TimeUnit.SECONDS);
      }
      if (failing) {
        throw new IllegalStateException("payments ledger offline");
      }
      try (PreparedStatement ps = session.getConnection().prepareStatement(
          "INSERT INTO payments VALUES (?, ?)")) {
        ps.setString(1, event.id());
        ps.setInt(2, event.body().length);
        ps.executeUpdate();
      }
    };
    WebhookEndpoint<SqlSession> stripe = WebhookEndpoint.builder(db.store)
        .consumerGroup("stripe")
        .signature(WebhookSignature.stripe(STRIPE_SECRET, STRIPE_OLD_SECRET))
        .maxBodyBytes(2048)
        .handler(record)
        .build();
    WebhookEndpoint<SqlSession> github = WebhookEndpoint.builder(db.store)
        .consumerGroup("github")
        .signature(WebhookSignature.github("It's a Secret to Everybody"))
        .handler(record)
        .build();
    WebhookEndpoint<SqlSession> standard = WebhookEndpoint.builder(db.store)
        .consumerGroup("svix")
        .signature(WebhookSignature.standardWebhooks("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        .clock(Clock.fixed(Instant.ofEpochSecond(1614265330 + 30), ZoneOffset.UTC))
        .handler(record)
        .build();
    server = new HttpTests.Server()
        .servlet("/hooks/stripe", stripe.servlet())
        .servlet("/hooks/github", github.servlet())
        .servlet("/hooks/standard", standard.servlet())
        .start();
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
    db.close();
  }

  private static String event(String id) {
    return "{\"id\":\"" + id + "\",\"object\":\"event\",\"type\":\"payment_intent.succeeded\","
        + "\"data\":{\"object\":{\"amount\":1999}}}";
  }

  private static HttpResponse<byte[]> deliver(String body, String secret, long timestamp) {
    return post(server.uri("/hooks/stripe"), body, "Stripe-Signature",
        StripeSignature.sign(secret, timestamp, body.getBytes(StandardCharsets.UTF_8)));
  }

  private static long now() {
    return Instant.now().getEpochSecond();
  }

  private static long payments(String id) {
    return db.count("SELECT count(*) FROM payments WHERE event_id = '" + id + "'");
  }

  @Test
  void aStripeEventIsAppliedOnceAndItsRedeliveryAnswered2xxWithoutTheHandler() {
    String id = "evt_" + UUID.randomUUID();
    HttpResponse<byte[]> first = deliver(event(id), STRIPE_SECRET, now());
    int after = runs.get();
    HttpResponse<byte[]> redelivered = deliver(event(id), STRIPE_SECRET, now() + 1);

    assertThat(first.statusCode()).isEqualTo(200);
    assertThat(text(first)).contains("\"status\":\"processed\"").contains(id);
    assertThat(redelivered.statusCode()).isEqualTo(200);
    assertThat(text(redelivered)).contains("\"status\":\"duplicate\"");
    assertThat(runs.get()).isEqualTo(after);
    assertThat(payments(id)).isEqualTo(1);
  }

  @Test
  void anEventSignedWithTheOldSecretDuringARotationIsAccepted() {
    String id = "evt_" + UUID.randomUUID();
    assertThat(deliver(event(id), STRIPE_OLD_SECRET, now()).statusCode()).isEqualTo(200);
    assertThat(payments(id)).isEqualTo(1);
  }

  @Test
  void aBadStaleUnknownOrMissingSignatureIsRefusedAndNothingIsWritten() {
    long before = db.written() + db.count("SELECT count(*) FROM payments");
    String id = "evt_" + UUID.randomUUID();
    String body = event(id);
    HttpResponse<byte[]> wrongSecret = deliver(body, "whsec_attacker", now());
    HttpResponse<byte[]> stale = deliver(body, STRIPE_SECRET, now() - 600);
    HttpResponse<byte[]> v0Only = post(server.uri("/hooks/stripe"), body, "Stripe-Signature",
        StripeSignature.sign(STRIPE_SECRET, now(), body.getBytes(StandardCharsets.UTF_8)).replace("v1=", "v0="));
    HttpResponse<byte[]> missing = post(server.uri("/hooks/stripe"), body);
    HttpResponse<byte[]> tampered = post(server.uri("/hooks/stripe"), body.replace("1999", "1"),
        "Stripe-Signature", StripeSignature.sign(STRIPE_SECRET, now(), body.getBytes(StandardCharsets.UTF_8)));

    assertProblem(wrongSecret, 401, "signature-mismatch");
    assertProblem(stale, 401, "signature-stale");
    assertProblem(v0Only, 400, "unknown-signature-scheme");
    assertProblem(missing, 401, "signature-missing");
    assertProblem(tampered, 401, "signature-mismatch");
    assertThat(db.written() + db.count("SELECT count(*) FROM payments")).isEqualTo(before);
  }

  @Test
  void signedButMalformedJsonAMissingIdOrABodyOverTheLimitIsRefusedAndNothingIsWritten() {
    long before = db.written() + db.count("SELECT count(*) FROM payments");
    HttpResponse<byte[]> malformed = deliver("{\"id\":\"evt_x\",", STRIPE_SECRET, now());
    HttpResponse<byte[]> noId = deliver("{\"object\":\"event\"}", STRIPE_SECRET, now());
    HttpResponse<byte[]> objectId = deliver("{\"id\":{\"nested\":1}}", STRIPE_SECRET, now());
    HttpResponse<byte[]> big = deliver("{\"id\":\"evt_big\",\"pad\":\"" + "x".repeat(3000) + "\"}", STRIPE_SECRET, now());

    assertProblem(malformed, 400, "malformed-json");
    assertProblem(noId, 400, "missing-idempotency-key");
    assertProblem(objectId, 400, "invalid-idempotency-key");
    assertProblem(big, 413, "body-too-large");
    assertThat(db.written() + db.count("SELECT count(*) FROM payments")).isEqualTo(before);
  }

  @Test
  void aFailingHandlerIsAnswered5xxNothingAppliedAndTheRedeliveryAppliesIt() {
    String id = "evt_" + UUID.randomUUID();
    failing = true;
    HttpResponse<byte[]> failed;
    try {
      failed = deliver(event(id), STRIPE_SECRET, now());
    } finally {
      failing = false;
    }
    assertProblem(failed, 500, "handler-failed");
    assertThat(failed.headers().firstValue("Retry-After")).isPresent();
    assertThat(payments(id)).isZero();

    HttpResponse<byte[]> redelivered = deliver(event(id), STRIPE_SECRET, now());
    assertThat(redelivered.statusCode()).isEqualTo(200);
    assertThat(text(redelivered)).contains("processed");
    assertThat(payments(id)).isEqualTo(1);
  }

  @Test
  void theSameEventIdWithAnotherBodyIs422AndNotApplied() {
    String id = "evt_" + UUID.randomUUID();
    deliver(event(id), STRIPE_SECRET, now());
    HttpResponse<byte[]> other = deliver(event(id).replace("1999", "2999"), STRIPE_SECRET, now());
    assertProblem(other, 422, "idempotency-key-reused");
    assertThat(payments(id)).isEqualTo(1);
  }

  @Test
  void concurrentRedeliveriesOfOneEventApplyItOnce() throws Exception {
    String id = "evt_" + UUID.randomUUID();
    int senders = 8;
    slow = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(senders);
    try {
      List<Future<HttpResponse<byte[]>>> answers = new ArrayList<>();
      for (int i = 0; i < senders; i++) {
        answers.add(pool.submit(() -> deliver(event(id), STRIPE_SECRET, now())));
      }
      // the first handler holds its claim until the others wait on its lock (or gave up: 409)
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() ->
          answers.stream().anyMatch(Future::isDone) || (holder != 0 && db.count(
              "SELECT count(*) FROM pg_stat_activity WHERE " + holder + " = ANY(pg_blocking_pids(pid))")
              >= senders - 1));
      slow.countDown();
      int processed = 0;
      for (Future<HttpResponse<byte[]>> answer : answers) {
        HttpResponse<byte[]> response = answer.get(60, TimeUnit.SECONDS);
        if (response.statusCode() == 200) {
          processed += text(response).contains("\"processed\"") ? 1 : 0;
        } else {
          assertProblem(response, 409, "request-in-flight");
        }
      }
      assertThat(processed).isEqualTo(1);
      assertThat(payments(id)).isEqualTo(1);
    } finally {
      slow = null;
      holder = 0;
      pool.shutdownNow();
    }
  }

  @Test
  void gitHubsDocumentedExampleIsAcceptedAndKeyedByTheDeliveryId() throws Exception {
    String delivery = UUID.randomUUID().toString();
    HttpRequest request = HttpRequest.newBuilder(server.uri("/hooks/github"))
        .header("Content-Type", "text/plain")
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
        .POST(HttpRequest.BodyPublishers.ofString("Hello, World!"))
        .build();
    HttpClient client = HttpTests.CLIENT;
    HttpResponse<byte[]> first = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
    HttpResponse<byte[]> again = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
    assertThat(first.statusCode()).as(text(first)).isEqualTo(200);
    assertThat(text(again)).contains("duplicate");
    assertThat(payments(delivery)).isEqualTo(1);

    HttpRequest forged = HttpRequest.newBuilder(server.uri("/hooks/github"))
        .header("X-GitHub-Delivery", UUID.randomUUID().toString())
        .header("X-Hub-Signature-256", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
        .POST(HttpRequest.BodyPublishers.ofString("Hello, World?"))
        .build();
    assertProblem(client.send(forged, HttpResponse.BodyHandlers.ofByteArray()), 401, "signature-mismatch");
  }

  @Test
  void theStandardWebhooksVectorIsAcceptedAndKeyedByWebhookId() {
    String body = "{\"test\": 2432232314}";
    HttpResponse<byte[]> first = post(server.uri("/hooks/standard"), body,
        "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
        "webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    HttpResponse<byte[]> again = post(server.uri("/hooks/standard"), body,
        "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
        "webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    assertThat(first.statusCode()).as(text(first)).isEqualTo(200);
    assertThat(text(again)).contains("duplicate");
    assertThat(payments("msg_p5jXN8AQM9LWM0D4loKWxJek")).isEqualTo(1);

    HttpResponse<byte[]> wrong = post(server.uri("/hooks/standard"), body,
        "webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek", "webhook-timestamp", "1614265330",
        "webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=");
    assertProblem(wrong, 401, "signature-mismatch");
  }

  private static void assertProblem(HttpResponse<byte[]> response, int status, String name) {
    assertThat(response.statusCode()).as(text(response)).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(text(response)).contains(name);
  }

}
