package io.idem.spring.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.PostgresFixture;
import io.idem.http.internal.StripeSignature;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.Banner;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@link IdempotentRequest} and {@code idem.http.webhooks.*} in a Spring Boot application on its
 * embedded Tomcat, over real HTTP, on the real PostgreSQL: the controller's {@code JdbcTemplate}
 * write joins Idem's transaction, the first answer is stored and replayed, a repeat in flight is
 * 409, an exception is Spring's answer with nothing stored; and the start-up refuses to serve
 * annotated endpoints without a store.
 */
class IdempotentRequestIT {
  private static final String SCHEMA = "spring_http_" + Long.toHexString(System.nanoTime());
  private static final String SECRET = "whsec_spring_it";
  private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private static ConfigurableApplicationContext app;
  private static DataSource data;
  private static URI base;

  @BeforeAll
  static void start() throws SQLException {
    PostgresFixture postgres = PostgresFixture.shared();
    postgres.createSchema(SCHEMA);
    data = postgres.dataSource(SCHEMA, 2);
    execute("CREATE TABLE orders (id bigserial PRIMARY KEY, item text)");
    execute("CREATE TABLE payments (event_id text)");
    app = run(List.of(
        "--idem.http.client-header=X-Client",
        "--idem.http.webhooks.stripe.path=/webhooks/stripe",
        "--idem.http.webhooks.stripe.scheme=stripe",
        "--idem.http.webhooks.stripe.secrets[0]=" + SECRET,
        "--idem.http.webhooks.stripe.handler=paymentHandler"));
    base = URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port"));
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    ((com.zaxxer.hikari.HikariDataSource) data).close();
  }

  private static ConfigurableApplicationContext run(List<String> extra) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> args = new ArrayList<>(List.of(
        "--spring.main.web-application-type=servlet",
        "--server.port=0", "--server.address=127.0.0.1",
        "--spring.datasource.url=" + postgres.jdbcUrl(),
        "--spring.datasource.username=" + postgres.user(),
        "--spring.datasource.password=" + postgres.password(),
        "--spring.datasource.hikari.schema=" + SCHEMA,
        "--spring.datasource.hikari.maximum-pool-size=6",
        // a session value the claim must give back to the handler (not the server's default)
        "--spring.datasource.hikari.connection-init-sql=SET lock_timeout = '5s'"));
    if (extra.stream().noneMatch(a -> a.startsWith("--idem.retention.enabled="))) {
      args.add("--idem.retention.enabled=false");
    }
    args.addAll(extra);
    return new SpringApplicationBuilder(HttpApp.class).bannerMode(Banner.Mode.OFF)
        .run(args.toArray(String[]::new));
  }

  private static void execute(String sql) throws SQLException {
    try (Connection c = data.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static long count(String sql) {
    try (Connection c = data.getConnection(); Statement s = c.createStatement(); ResultSet rows = s.executeQuery(sql)) {
      rows.next();
      return rows.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static HttpResponse<String> post(String path, String body, String... headers) {
    HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(path))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    try {
      return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static long orders(String item) {
    return count("SELECT count(*) FROM orders WHERE item = '" + item + "'");
  }

  @Test
  void theHandlersLockWaitsHaveTheConnectionsLockTimeoutNotTheClaims() {
    // the claim keeps the session's 5s, claims under 1 ms and sets the 5s back in its own round trip
    HttpResponse<String> answer = post("/lock-timeout", "{}", "Idempotency-Key", UUID.randomUUID().toString(),
        "X-Client", "alice");
    assertThat(answer.statusCode()).isEqualTo(200);
    assertThat(answer.body()).isEqualTo("{\"lock_timeout\":\"5s\"}");
  }

  @Test
  void theControllersWriteJoinsIdemsTransactionAndARepeatGetsTheStoredAnswer() {
    String key = UUID.randomUUID().toString();
    String item = "book-" + key;
    HttpResponse<String> first = post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "alice");
    HttpResponse<String> second = post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "alice");

    assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
    assertThat(second.statusCode()).isEqualTo(201);
    assertThat(second.body()).isEqualTo(first.body());
    assertThat(second.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    assertThat(second.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
    assertThat(orders(item)).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_processed_events WHERE response_status IS NOT NULL AND idempotency_key = 'alice:" + key + "'")).isEqualTo(1);
  }

  @Test
  void anotherBodyIs422AMissingKey400AndAnotherClientIsItsOwnScope() {
    String key = UUID.randomUUID().toString();
    String item = "pen-" + key;
    post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "alice");
    HttpResponse<String> reused = post("/orders", "{\"item\":\"other\"}", "Idempotency-Key", key, "X-Client", "alice");
    HttpResponse<String> missing = post("/orders", "{\"item\":\"" + item + "\"}", "X-Client", "alice");
    HttpResponse<String> bob = post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "bob");

    assertThat(reused.statusCode()).isEqualTo(422);
    assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    assertThat(missing.statusCode()).isEqualTo(400);
    assertThat(missing.body()).contains("missing-idempotency-key");
    assertThat(bob.statusCode()).isEqualTo(201);
    assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(orders(item)).isEqualTo(2);
  }

  @Test
  void whatTheControllerThrowsIsSpringsAnswerWithTheWriteRolledBackAndNothingStored() {
    String key = UUID.randomUUID().toString();
    HttpResponse<String> refused = post("/orders", "{\"item\":\"refused\"}", "Idempotency-Key", key, "X-Client", "carol");
    HttpResponse<String> again = post("/orders", "{\"item\":\"refused\"}", "Idempotency-Key", key, "X-Client", "carol");
    assertThat(refused.statusCode()).isEqualTo(400);
    assertThat(again.statusCode()).isEqualTo(400);
    assertThat(again.headers().firstValue("Idempotent-Replayed")).isEmpty();
    assertThat(orders("refused")).isZero();
    assertThat(count("SELECT count(*) FROM idem_processed_events WHERE idempotency_key = 'carol:" + key
        + "' AND outcome = 'PROCESSED'")).isZero();
  }

  @Test
  void aRepeatWhileTheFirstIsInFlightIs409() throws Exception {
    String key = UUID.randomUUID().toString();
    String item = "lamp-" + key;
    HttpApp.hold = new CountDownLatch(1);
    HttpApp.entered = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<HttpResponse<String>> first = pool.submit(() ->
          post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "dave"));
      assertThat(HttpApp.entered.await(30, TimeUnit.SECONDS)).isTrue();
      HttpApp.entered = null;
      HttpResponse<String> repeat = post("/orders", "{\"item\":\"" + item + "\"}", "Idempotency-Key", key, "X-Client", "dave");
      assertThat(repeat.statusCode()).as(repeat.body()).isEqualTo(409);
      assertThat(first.isDone()).isFalse();
      HttpApp.hold.countDown();
      assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
      assertThat(orders(item)).isEqualTo(1);
    } finally {
      HttpApp.hold = null;
      HttpApp.entered = null;
      pool.shutdownNow();
    }
  }

  @Test
  void anOptionalKeyMethodWithoutAKeyRunsInAPlainTransaction() {
    String text = UUID.randomUUID().toString();
    assertThat(post("/notes", "{\"text\":\"" + text + "\"}", "X-Client", "erin").statusCode()).isEqualTo(200);
    assertThat(post("/notes", "{\"text\":\"" + text + "\"}", "X-Client", "erin").statusCode()).isEqualTo(200);
    assertThat(orders("note:" + text)).isEqualTo(2);
  }

  @Test
  void theConfiguredWebhookReceiverAppliesAnEventOnceAndRefusesABadSignature() {
    String id = "evt_" + UUID.randomUUID();
    String body = "{\"id\":\"" + id + "\",\"type\":\"charge.succeeded\"}";
    String signature = StripeSignature.sign(SECRET, Instant.now().getEpochSecond(), body.getBytes(StandardCharsets.UTF_8));
    HttpResponse<String> first = post("/webhooks/stripe", body, "Stripe-Signature", signature);
    HttpResponse<String> again = post("/webhooks/stripe", body, "Stripe-Signature", signature);
    HttpResponse<String> forged = post("/webhooks/stripe", body, "Stripe-Signature",
        StripeSignature.sign("whsec_wrong", Instant.now().getEpochSecond(), body.getBytes(StandardCharsets.UTF_8)));
    assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
    assertThat(again.body()).contains("duplicate");
    assertThat(forged.statusCode()).isEqualTo(401);
    assertThat(count("SELECT count(*) FROM payments WHERE event_id = '" + id + "'")).isEqualTo(1);
  }

  @Test
  void annotatedEndpointsWithoutAStoreFailTheStartUpNamingWhatIsMissing() {
    assertThat(startUpFailure(List.of("--idem.enabled=false")))
        .contains("@IdempotentRequest method(s)")
        .contains("idem.enabled=false")
        .contains("refusing to start");
  }

  @Test
  void aRetentionShorterThanTheRetryWindowFailsTheStartUp() {
    assertThat(startUpFailure(List.of("--idem.retention.enabled=true", "--idem.retention.retention=1h",
        "--idem.http.retry-window=24h")))
        .contains("idem.retention.retention (PT1H) is shorter than idem.http.retry-window (PT24H)");
  }

  /** The messages of the start-up failure and its causes, joined. */
  private static String startUpFailure(List<String> args) {
    // Spring and Tomcat log the refused start at ERROR/WARN: expected here
    List<ch.qos.logback.classic.Logger> loggers = List.of("org.springframework", "org.apache.catalina")
        .stream().map(name -> (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(name)).toList();
    List<ch.qos.logback.classic.Level> levels = loggers.stream().map(ch.qos.logback.classic.Logger::getLevel).toList();
    loggers.forEach(logger -> logger.setLevel(ch.qos.logback.classic.Level.OFF));
    Throwable failure;
    try {
      failure = org.assertj.core.api.Assertions.catchThrowable(() -> run(args).close());
    } finally {
      for (int i = 0; i < loggers.size(); i++) {
        loggers.get(i).setLevel(levels.get(i));
      }
    }
    assertThat(failure).as("the application refused to start").isNotNull();
    StringBuilder messages = new StringBuilder();
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      messages.append(t.getMessage()).append('\n');
    }
    return messages.toString();
  }
}
