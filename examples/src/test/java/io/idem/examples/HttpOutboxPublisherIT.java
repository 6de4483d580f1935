package io.idem.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxRelay;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The outbox's HTTP pattern: a relay posts charges to a local payment API (the JDK's HttpServer)
 * that deduplicates by the Idempotency-Key header as payment APIs do. A lost answer makes the
 * relay post again; the API charges once.
 */
class HttpOutboxPublisherIT {
  private final Map<String, String> chargesByKey = new ConcurrentHashMap<>();
  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicInteger unavailableLeft = new AtomicInteger();
  private HttpServer api;
  private HikariDataSource pool;
  private SqlSessionFactory sessions;

  @BeforeEach
  void setUp() throws IOException {
    api = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    api.createContext("/v1/charges", this::charge);
    api.start();
    pool = PostgresFixture.shared().newSchema("outbox_http");
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
  }

  @AfterEach
  void tearDown() {
    api.stop(0);
    pool.close();
  }

  /** The payment API: one charge per Idempotency-Key; a repeat replays the first answer. */
  private void charge(HttpExchange exchange) throws IOException {
    requests.incrementAndGet();
    String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
    String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
    int status;
    String answer;
    if (key == null) {
      status = 400;
      answer = "{\"error\":\"Idempotency-Key required\"}";
    } else if (body.contains("\"amount\":-")) {
      status = 422;
      answer = "{\"error\":\"amount must be positive\"}";
    } else if (unavailableLeft.getAndDecrement() > 0) {
      status = 503;
      answer = "{\"error\":\"try again\"}";
    } else {
      boolean[] created = {false};
      answer = chargesByKey.computeIfAbsent(key, k -> {
        created[0] = true;
        return "{\"charge\":\"ch_" + chargesByKey.size() + "\",\"request\":" + body + "}";
      });
      status = created[0] ? 201 : 200;
      exchange.getResponseHeaders().add("Idempotent-Replayed", String.valueOf(!created[0]));
    }
    byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(status, bytes.length);
    exchange.getResponseBody().write(bytes);
    exchange.close();
  }

  private void enqueue(String key, String body) {
    try (SqlSession session = sessions.openSession(false)) {
      Outbox.ofDefaults().enqueue(session, new IdempotencyKey("payments", key, KeySource.HEADER),
          "v1/charges", body.getBytes(StandardCharsets.UTF_8), Map.of("Content-Type", "application/json"));
      session.commit();
    }
  }

  private OutboxRelay relay(OutboxPublisher publisher) {
    return OutboxRelay.builder(sessions, publisher)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(50))
            .maxBackoff(Duration.ofMillis(50)).jitter(0).build())
        .build();
  }

  private HttpOutboxPublisher http() {
    return new HttpOutboxPublisher(HttpClient.newHttpClient(),
        URI.create("http://127.0.0.1:" + api.getAddress().getPort() + "/"), Duration.ofSeconds(10));
  }

  private String column(String key, String sql) throws Exception {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + sql + " FROM idem_outbox WHERE idempotency_key = '" + key + "'")) {
      rs.next();
      return String.valueOf(rs.getObject(1));
    }
  }

  @Test
  void aLostAnswerIsPostedAgainWithTheSameKeyAndTheApiChargesOnce() throws Exception {
    enqueue("order-1:charge", "{\"amount\":4200}");
    HttpOutboxPublisher http = http();
    AtomicBoolean loseTheFirstAnswer = new AtomicBoolean(true);
    OutboxRelay relay = relay(message -> {
      http.publish(message);
      if (loseTheFirstAnswer.getAndSet(false)) {
        throw new IOException("read timed out (the API charged, the answer was lost)");
      }
    });
    relay.relayOnce();
    assertThat(column("order-1:charge", "sent_at IS NOT NULL")).isEqualTo("false");
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> relay.relayOnce() == 1);
    assertThat(column("order-1:charge", "sent_at IS NOT NULL")).isEqualTo("true");
    assertThat(requests).hasValue(2);
    assertThat(chargesByKey).containsOnlyKeys("order-1:charge");
  }

  @Test
  void unavailableIsRetriedAndARefusalIsParkedWithTheApisAnswer() throws Exception {
    enqueue("order-2:charge", "{\"amount\":100}");
    enqueue("order-3:charge", "{\"amount\":-5}");
    unavailableLeft.set(1);
    OutboxRelay relay = relay(http());
    assertThat(relay.relayOnce()).isEqualTo(2);
    assertThat(column("order-3:charge", "last_error")).contains("HTTP 422").contains("amount must be positive");
    assertThat(column("order-3:charge", "parked_at IS NOT NULL")).isEqualTo("true");
    assertThat(column("order-2:charge", "last_error")).contains("HTTP 503");
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> relay.relayOnce() == 1);
    assertThat(column("order-2:charge", "sent_at IS NOT NULL")).isEqualTo("true");
    assertThat(chargesByKey).containsOnlyKeys("order-2:charge");
  }
}
