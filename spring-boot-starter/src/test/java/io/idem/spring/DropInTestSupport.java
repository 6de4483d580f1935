package io.idem.spring;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.jspecify.annotations.Nullable;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What the drop-in listener tests share: a fresh PostgreSQL schema with the application's own
 * {@code payments} table, the handler's behaviour (write a row with JdbcTemplate, then fail when
 * the body says so) and a record of what Idem decided per key.
 */
final class DropInTestSupport {
  private DropInTestSupport() {}

  /** The properties every drop-in test application runs with. */
  static final String[] PROPERTIES = {
      "spring.main.banner-mode=off",
      "idem.retry.max-attempts=3",
      "idem.retry.initial-backoff=10ms",
      "idem.retry.max-backoff=50ms",
      "idem.retention.enabled=false"};

  /** The Idem settings above: deliveries of a message that always fails. */
  static final int MAX_ATTEMPTS = 3;

  /** How long a test waits for what the listener does: generous for a loaded 2-core machine. */
  static final Duration WAIT = Duration.ofSeconds(45);

  /**
   * A connection factory of its own on the shared Artemis, for one application context: the
   * context closes its ConnectionFactory bean, which must not be the fixture's shared one.
   */
  static jakarta.jms.ConnectionFactory artemisConnectionFactory() {
    ArtemisFixture artemis = ArtemisFixture.shared();
    return new ActiveMQConnectionFactory(artemis.url(), artemis.user(), artemis.password());
  }

  /**
   * Spring Boot's {@code spring.rabbitmq.*} for the fixtures' RabbitMQ. Spring Boot takes the vhost
   * of an address literally, and RabbitFixture's URI encodes "/" as %2F: so host, port, user and
   * vhost one by one.
   */
  static Map<String, String> rabbitProperties() {
    URI uri = URI.create(RabbitFixture.shared().uri());
    String[] user = uri.getRawUserInfo() == null ? new String[] {"guest", "guest"} : uri.getUserInfo().split(":", 2);
    return Map.of(
        "spring.rabbitmq.host", uri.getHost(),
        "spring.rabbitmq.port", String.valueOf(uri.getPort() < 0 ? 5672 : uri.getPort()),
        "spring.rabbitmq.username", user[0],
        "spring.rabbitmq.password", user.length > 1 ? user[1] : "",
        "spring.rabbitmq.virtual-host",
        uri.getPath() == null || uri.getPath().length() <= 1 ? "/" : uri.getPath().substring(1));
  }

  /** {@link Shared} on a PostgreSQL schema of its own. */
  @Configuration(proxyBeanMethods = false)
  @org.springframework.context.annotation.Import(Shared.class)
  static class Beans {
    /**
     * A schema of its own, kept until the test JVM ends: Spring's context cache shares one
     * application between the test classes of the same configuration, so the schema must outlive
     * the class that created it.
     */
    @Bean
    DataSource dataSource() {
      com.zaxxer.hikari.HikariDataSource pool = PostgresFixture.shared().newSchema("spring_dropin");
      io.idem.fixtures.TestSchemas.keepForJvm(pool.getSchema());
      new JdbcTemplate(pool).execute(
          "CREATE TABLE payments (id text NOT NULL, body text NOT NULL)");
      return pool;
    }
  }

  /**
   * The beans every drop-in application shares, whatever its database: the outcomes, the
   * dead-letter inbox and the listeners' {@link Payments} on the application's {@code payments}
   * table (which the application's DataSource bean creates).
   */
  @Configuration(proxyBeanMethods = false)
  static class Shared {
    @Bean
    Outcomes outcomes() {
      return new Outcomes();
    }

    @Bean
    IdemListenerFactory recordingListeners(Outcomes outcomes) {
      return group -> outcomes;
    }

    @Bean
    DeadLetterInbox deadLetterInbox() {
      return new DeadLetterInbox();
    }

    @Bean
    Payments payments(JdbcTemplate jdbc) {
      return new Payments(jdbc);
    }
  }

  /** The dead letters each test's dead-letter listener read, by idempotency key, with their headers. */
  static final class DeadLetterInbox {
    private final Map<String, Map<String, String>> byKey = new ConcurrentHashMap<>();

    void received(@Nullable String key, Map<String, String> headers) {
      if (key != null) {
        byKey.put(key, Map.copyOf(headers));
      }
    }

    @Nullable Map<String, String> of(String key) {
      return byKey.get(key);
    }
  }

  /** What Idem decided, per key, in order. */
  static final class Outcomes implements IdempotencyListener {
    private final Map<String, List<ProcessingOutcome>> byKey = new ConcurrentHashMap<>();
    private final Map<String, List<RuntimeException>> failedAcknowledgements = new ConcurrentHashMap<>();
    private final Map<String, List<Long>> failedAcknowledgementNanos = new ConcurrentHashMap<>();

    @Override
    public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome outcome, Duration elapsed) {
      if (key != null) {
        byKey.computeIfAbsent(key.value(), k -> new CopyOnWriteArrayList<>()).add(outcome);
      }
    }

    @Override
    public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
      if (key != null) {
        failedAcknowledgementNanos.computeIfAbsent(key.value(), k -> new CopyOnWriteArrayList<>()).add(System.nanoTime());
        failedAcknowledgements.computeIfAbsent(key.value(), k -> new CopyOnWriteArrayList<>()).add(failure);
      }
    }

    List<ProcessingOutcome> of(String key) {
      return byKey.getOrDefault(key, List.of());
    }

    /** When (System.nanoTime) each acknowledgement of {@code key} threw, in order. */
    List<Long> failedAcknowledgementTimes(String key) {
      return failedAcknowledgementNanos.getOrDefault(key, List.of());
    }

    /** What the acknowledgement threw for {@code key} (a dead-letter copy that could not be stored…). */
    List<RuntimeException> failedAcknowledgements(String key) {
      return failedAcknowledgements.getOrDefault(key, List.of());
    }
  }

  /**
   * The listener's business logic: one row in {@code payments} per run, written with the
   * application's JdbcTemplate; a body starting with {@code poison} then always fails, one
   * starting with {@code flaky} fails on its first run only, {@code flaky<n>} on its first
   * {@code n} runs.
   */
  static final class Payments {
    private final JdbcTemplate jdbc;
    private final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();

    Payments(JdbcTemplate jdbc) {
      this.jdbc = jdbc;
    }

    void apply(String key, String body) {
      int run = runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
      jdbc.update("INSERT INTO payments (id, body) VALUES (?, ?)", key, body);
      if (body.startsWith("poison") || (body.startsWith("flaky") && run <= failuresOf(body))) {
        throw new IllegalStateException("injected failure of " + key + " on run " + run);
      }
    }

    private static int failuresOf(String body) {
      int end = "flaky".length();
      while (end < body.length() && Character.isDigit(body.charAt(end))) {
        end++;
      }
      return end == "flaky".length() ? 1 : Integer.parseInt(body.substring("flaky".length(), end));
    }

    int runs(String key) {
      AtomicInteger n = runs.get(key);
      return n == null ? 0 : n.get();
    }

    int rows(String key) {
      return jdbc.queryForObject("SELECT count(*) FROM payments WHERE id = ?", Integer.class, key);
    }
  }
}
