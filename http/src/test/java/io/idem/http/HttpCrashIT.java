package io.idem.http;

import static io.idem.http.HttpTests.post;
import static io.idem.http.HttpTests.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import io.idem.http.internal.StripeSignature;
import io.idem.testkit.CrashInjector;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crash between the commit and the answer: the receiver runs in a child JVM that halts itself
 * ({@code Runtime.halt}, as {@code kill -9}) right after the claiming transaction committed and
 * before a byte of the answer is written. The client sees the connection die; its retry, served by
 * a restarted receiver, gets the stored answer (Idempotency-Key) or a 2xx duplicate (webhook), and
 * the effect is in the database exactly once.
 */
class HttpCrashIT {
  private static HikariDataSource dataSource;
  private static HttpTests.Db db;
  private static final List<ChildJvm> children = new ArrayList<>();

  @BeforeAll
  static void schema() {
    dataSource = PostgresFixture.shared().newSchema("http_crash_it");
    db = new HttpTests.Db(dataSource);
  }

  @AfterAll
  static void stop() {
    children.forEach(ChildJvm::close);
    dataSource.close();
  }

  /** A receiver in a child JVM; {@code crashAfterCommit} halts it after its first commit. */
  private static URI receiver(boolean crashAfterCommit) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvm = new ArrayList<>(List.of(
        "-Didem.it.url=" + postgres.jdbcUrl(), "-Didem.it.user=" + postgres.user(),
        "-Didem.it.password=" + postgres.password(), "-Didem.it.schema=" + dataSource.getSchema(),
        "-Xmx256m"));
    if (crashAfterCommit) {
      jvm.add("-Didem.crash.point=AFTER_COMMIT");
      jvm.add("-Didem.crash.after=0");
    }
    ChildJvm child = ChildJvm.start("http-receiver", HttpReceiverChild.class, jvm, List.of(), Map.of(), line -> { });
    children.add(child);
    await().atMost(Duration.ofSeconds(90)).until(() -> child.printed("LISTENING ") || !child.isAlive());
    assertThat(child.isAlive()).as("the receiver started: %s", child.lines()).isTrue();
    String line = child.lines().stream().filter(l -> l.startsWith("LISTENING ")).findFirst().orElseThrow();
    return URI.create("http://127.0.0.1:" + line.substring("LISTENING ".length()).trim());
  }

  private static void awaitHalted(ChildJvm child) {
    assertThat(child.waitFor(Duration.ofSeconds(30))).isEqualTo(CrashInjector.EXIT_STATUS);
    assertThat(child.printed("IDEM-CRASH AFTER_COMMIT")).isTrue();
  }

  @Test
  void aRetryAfterTheReceiverDiedBetweenCommitAndAnswerGetsTheStoredAnswer() {
    String key = UUID.randomUUID().toString();
    String client = "crash-" + key;
    URI victim = receiver(true);
    assertThatThrownBy(() -> post(victim.resolve("/orders"), "{}", "Idempotency-Key", key, "X-Client", client))
        .as("the client never got an answer").isInstanceOf(java.io.UncheckedIOException.class);
    awaitHalted(children.get(children.size() - 1));
    long committed = db.count("SELECT id FROM orders WHERE client = '" + client + "'");
    assertThat(db.count("SELECT count(*) FROM orders WHERE client = '" + client + "'")).isEqualTo(1);

    URI restarted = receiver(false);
    HttpResponse<byte[]> retry = post(restarted.resolve("/orders"), "{}", "Idempotency-Key", key, "X-Client", client);
    assertThat(retry.statusCode()).isEqualTo(201);
    assertThat(retry.headers().firstValue(IdempotencyKeyEndpoint.REPLAYED_HEADER)).hasValue("true");
    assertThat(text(retry)).startsWith("{\"id\":" + committed + ",");
    assertThat(db.count("SELECT count(*) FROM orders WHERE client = '" + client + "'")).isEqualTo(1);
  }

  @Test
  void aWebhookRedeliveredAfterTheReceiverDiedBetweenCommitAndAnswerIsA2xxDuplicate() {
    String id = "evt_" + UUID.randomUUID();
    String body = "{\"id\":\"" + id + "\",\"type\":\"order.paid\"}";
    URI victim = receiver(true);
    assertThatThrownBy(() -> post(victim.resolve("/hooks/stripe"), body, "Stripe-Signature", signed(body)))
        .isInstanceOf(java.io.UncheckedIOException.class);
    awaitHalted(children.get(children.size() - 1));
    assertThat(db.count("SELECT count(*) FROM orders WHERE note = '" + id + "'")).isEqualTo(1);

    URI restarted = receiver(false);
    HttpResponse<byte[]> redelivery = post(restarted.resolve("/hooks/stripe"), body, "Stripe-Signature", signed(body));
    assertThat(redelivery.statusCode()).isEqualTo(200);
    assertThat(text(redelivery)).contains("\"status\":\"duplicate\"");
    assertThat(db.count("SELECT count(*) FROM orders WHERE note = '" + id + "'")).isEqualTo(1);
  }

  private static String signed(String body) {
    return StripeSignature.sign(HttpReceiverChild.STRIPE_SECRET, Instant.now().getEpochSecond(),
        body.getBytes(StandardCharsets.UTF_8));
  }
}
