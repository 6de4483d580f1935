package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.TestDatabases;
import io.idem.store.jdbc.Dialect;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter on MariaDB: a Spring Boot application whose only {@code DataSource} is a MariaDB
 * database, an {@code @Idempotent @RabbitListener} (RabbitMQ: the local server, nothing to start)
 * on four concurrent consumers writing with {@code JdbcTemplate}. The starter reads the database
 * from the DataSource ({@code Dialect.MARIADB}), creates its table with the MariaDB scripts, and
 * the drop-in contract holds as on PostgreSQL; copies of one key racing on the four consumers
 * apply one effect per key; a handler's lock wait timeout (MariaDB error 1205, which InnoDB
 * reports with SQLSTATE HY000) is a transaction retry, not the handler's failure. The outbox is
 * off here: {@link MariaDbOutboxIT} runs it on MariaDB.
 */
@SpringBootTest(classes = MariaDbDropInIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    "idem.outbox.enabled=false",
    "spring.rabbitmq.listener.simple.concurrency=4",
    "spring.rabbitmq.listener.simple.prefetch=1",
    "logging.level.org.springframework.amqp.rabbit=ERROR"})
class MariaDbDropInIT extends DropInTest implements DropInListenerContract {
  static final String QUEUE = "spring-mariadb-" + UUID.randomUUID();
  /** The handler waits for this row's lock before it writes, when the body says {@code locked}. */
  static final String LOCKS = "payment_locks";

  @DynamicPropertySource
  static void rabbit(DynamicPropertyRegistry registry) {
    DropInTestSupport.rabbitProperties().forEach((name, value) -> registry.add(name, () -> value));
    registry.add("test.queue", () -> QUEUE);
  }

  @Autowired RabbitTemplate template;
  @Autowired DataSource dataSource;

  @Override
  public void send(String key, String body) {
    send(template, QUEUE, key, body);
  }

  /** Sends {@code body} to {@code queue} with the idempotency key {@code key} and a fresh message id. */
  static void send(RabbitTemplate template, String queue, String key, String body) {
    MessageProperties properties = new MessageProperties();
    properties.setMessageId(UUID.randomUUID().toString());
    properties.setHeader("idempotency-key", key);
    template.send("", queue, new Message(body.getBytes(StandardCharsets.UTF_8), properties));
  }

  @Test
  void theStarterPicksMariaDbFromTheDataSourceAndCreatesItsTableThere() {
    assertThat(store.delegate().dialect()).isEqualTo(Dialect.MARIADB);
    Integer tables = new JdbcTemplate(dataSource).queryForObject("SELECT count(*) FROM"
        + " information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'idem_processed_events'",
        Integer.class);
    assertThat(tables).isEqualTo(1);
  }

  /**
   * 30 keys, each sent three times in a row: the four consumers (prefetch 1) take the copies of a
   * key at once, so their claims race on InnoDB's duplicate-key lock. Every key is applied once.
   */
  @Test
  void copiesOfAKeyRacingOnFourConsumersApplyOneEffectPerKey() {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      String key = "race-" + UUID.randomUUID();
      keys.add(key);
      for (int copy = 0; copy < 3; copy++) {
        send(key, "pay " + i);
      }
    }
    await().atMost(WAIT).until(() -> keys.stream().allMatch(key -> settled(key) == 3));
    for (String key : keys) {
      assertThat(outcomes.of(key)).as(key).filteredOn(o -> o == ProcessingOutcome.PROCESSED).hasSize(1);
      assertThat(payments.runs(key)).as("handler runs of %s", key).isEqualTo(1);
      assertThat(payments.rows(key)).as("rows of %s", key).isEqualTo(1);
    }
  }

  private long settled(String key) {
    return outcomes.of(key).stream()
        .filter(o -> o == ProcessingOutcome.PROCESSED || o == ProcessingOutcome.DUPLICATE).count();
  }

  /**
   * The handler's statement waits for a row another transaction holds, past its 1 s lock wait:
   * MariaDB's 1205 is a transaction retry (not counted as an attempt, so never dead-lettered for
   * it), and once the row is free the message is applied once.
   */
  @Test
  void aHandlersLockWaitTimeoutIsATransactionRetry() throws Exception {
    String key = "k-" + UUID.randomUUID();
    try (Connection holder = dataSource.getConnection(); Statement s = holder.createStatement()) {
      holder.setAutoCommit(false);
      s.executeUpdate("UPDATE " + LOCKS + " SET n = n + 1 WHERE id = 1");
      send(key, "locked 50");
      // more lock waits than max-attempts: a handler failure would have dead-lettered it by then
      await().atMost(WAIT).until(() -> outcomes.of(key).stream()
          .filter(o -> o == ProcessingOutcome.RETRY_TRANSACTION).count() > DropInTestSupport.MAX_ATTEMPTS);
      assertThat(outcomes.of(key)).containsOnly(ProcessingOutcome.RETRY_TRANSACTION);
      holder.rollback();
    }
    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(payments.rows(key)).isEqualTo(1);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Database.class, DropInTestSupport.Shared.class, Listeners.class, DeadLetters.class})
  static class App {
    /** Deleted by the broker when the test's consumers go: nothing left behind. */
    @Bean
    Queue mariaDbQueue() {
      return new Queue(QUEUE, false, false, true);
    }

    @Bean
    Queue mariaDbDeadLetterQueue() {
      return new Queue(QUEUE + RabbitDeliveries.DEAD_LETTER_SUFFIX, false, false, true);
    }
  }

  /** A MariaDB database of its own, kept until the test JVM ends (Spring's context cache). */
  @Configuration(proxyBeanMethods = false)
  static class Database {
    @Bean
    DataSource dataSource() {
      MariaDbFixture mariaDb = MariaDbFixture.shared();
      String database = "spring_dropin_" + UUID.randomUUID().toString().substring(0, 8);
      mariaDb.createDatabase(database);
      TestDatabases.keepForJvm(database);
      DataSource pool = mariaDb.dataSource(database, 10);
      JdbcTemplate jdbc = new JdbcTemplate(pool);
      jdbc.execute("CREATE TABLE payments (id varchar(100) NOT NULL, body text NOT NULL)");
      jdbc.execute("CREATE TABLE " + LOCKS + " (id int PRIMARY KEY, n int NOT NULL)");
      jdbc.update("INSERT INTO " + LOCKS + " VALUES (1, 0)");
      return pool;
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;
    @Autowired JdbcTemplate jdbc;

    @RabbitListener(queues = "${test.queue}")
    @Idempotent(consumerGroup = DropInListenerContract.GROUP)
    public void onPayment(Message message) {
      String body = new String(message.getBody(), StandardCharsets.UTF_8);
      if (body.startsWith("locked")) {
        jdbc.update("SET STATEMENT innodb_lock_wait_timeout = 1 FOR UPDATE " + LOCKS + " SET n = n + 1 WHERE id = 1");
      }
      payments.apply((String) message.getMessageProperties().getHeaders().get("idempotency-key"), body);
    }
  }

  /** Reads the dead-letter queue. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @RabbitListener(queues = "${test.queue}.dlq")
    public void onDeadLetter(Message message) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      message.getMessageProperties().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
      inbox.received(headers.get("idempotency-key"), headers);
    }
  }
}
