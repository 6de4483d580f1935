package io.idem.rabbitmq;

import static io.idem.spi.OutboxPublishResult.Status.FAILED;
import static io.idem.spi.OutboxPublishResult.Status.SENT;
import static io.idem.spi.OutboxPublishResult.Status.SKIPPED;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * The relay publishing batches to the local RabbitMQ with {@link RabbitOutboxPublisher#publishAll}
 * (one wait for the batch's publisher confirms) and PostgreSQL: per-row nacks (a full queue with
 * {@code reject-publish}) and returns (no queue for the routing key) in the middle of a batch are
 * failures of those rows only; the failing key's later rows are released uncharged, the other
 * keys' rows are sent; nothing is lost or reordered.
 */
class RabbitOutboxRelayBatchIT {
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private Connection connection;
  private String main;
  private String full;
  private String missing;

  @BeforeEach
  void setUp() throws Exception {
    pool = PostgresFixture.shared().newSchema("rabbit_outbox_batch");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    connection = RabbitFixture.shared().connectionFactory().newConnection("idem-test-outbox-batch");
    String suffix = UUID.randomUUID().toString().substring(0, 8);
    main = "idem-test-outbox-batch-main-" + suffix;
    full = "idem-test-outbox-batch-full-" + suffix;
    missing = "idem-test-outbox-batch-missing-" + suffix; // declared only later in the test
    try (Channel ch = connection.createChannel()) {
      ch.queueDeclare(main, true, false, false, Map.of("x-queue-type", "quorum"));
      ch.queueDeclare(full, true, false, false, Map.of("x-max-length", 2, "x-overflow", "reject-publish"));
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    try (Channel ch = connection.createChannel()) {
      ch.queueDelete(main);
      ch.queueDelete(full);
      ch.queueDelete(missing);
    }
    connection.close();
    observer.close();
    pool.close();
  }

  private long count(String sql) throws Exception {
    String qualified = sql.replace("idem_outbox", pool.getSchema() + ".idem_outbox");
    try (java.sql.Connection c = observer.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(qualified)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private List<String> drain(String queue) throws Exception {
    List<String> payloads = new ArrayList<>();
    try (Channel ch = connection.createChannel()) {
      for (GetResponse r; (r = ch.basicGet(queue, true)) != null; ) {
        payloads.add(new String(r.getBody(), StandardCharsets.UTF_8));
      }
    }
    return payloads;
  }

  @Test
  void aNackAndAReturnMidBatchFailTheirRowsOnlyAndTheirKeysWaitInOrder() throws Exception {
    String[][] rows = { // key, destination, ordering key
        {"A1", full, "A"}, {"B1", main, "B"}, {"A2", full, "A"}, {"free1", main, null},
        {"A3", full, "A"}, {"B2", main, "B"}, {"C1", missing, "C"}, {"A4", full, "A"},
        {"C2", missing, "C"}, {"B3", main, "B"}, {"free2", main, null}};
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      for (String[] r : rows) {
        outbox.enqueue(session, new OutboxEntry(r[0], r[1], r[2], r[0].getBytes(StandardCharsets.UTF_8), Map.of()));
      }
      session.commit();
    }
    RabbitOutboxPublisher rabbit = RabbitOutboxPublisher.create(connection, "", Duration.ofSeconds(10));
    List<List<OutboxPublishResult>> batches = new CopyOnWriteArrayList<>();
    OutboxPublisher recording = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("the relay publishes RabbitMQ batches with publishAll");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        List<OutboxPublishResult> results = rabbit.publishAll(messages);
        batches.add(results);
        return results;
      }
    };
    OutboxRelay relay = OutboxRelay.builder(sessions, recording).batchSize(50)
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMinutes(1)).jitter(0).build())
        .name("rabbit-batch-relay").build();
    try {
      assertThat(relay.relayOnce()).isEqualTo(rows.length);

      assertThat(batches).singleElement().satisfies(results -> assertThat(results)
          .extracting(OutboxPublishResult::status).containsExactly(
              SENT, SENT, SENT, SENT, FAILED, SENT, FAILED, SKIPPED, SKIPPED, SENT, SENT));
      assertThat(batches.get(0).get(4).failure()).hasMessageContaining("nacked");
      assertThat(batches.get(0).get(6).failure()).hasMessageContaining("unroutable");
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL")).isEqualTo(7);
      assertThat(count("SELECT count(DISTINCT sent_at) FROM idem_outbox WHERE sent_at IS NOT NULL"))
          .as("marked sent in one statement").isEqualTo(1);
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A3', 'C1')"
          + " AND sent_at IS NULL AND attempts = 1 AND parked_at IS NULL AND last_error IS NOT NULL")).isEqualTo(2);
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A4', 'C2')"
          + " AND sent_at IS NULL AND attempts = 0 AND leased_by IS NULL AND next_attempt_at <= now()"))
          .as("held behind their key's failure, uncharged").isEqualTo(2);
      assertThat(relay.lastStats().failures()).isEqualTo(2);
      assertThat(relay.health().destinationUnavailableUntil()).isNull();
      assertThat(drain(main)).containsExactly("B1", "free1", "B2", "B3", "free2");
      assertThat(drain(full)).containsExactly("A1", "A2");

      // The full queue drained, the missing one declared, the backoff over: A and C go on in order.
      try (Channel ch = connection.createChannel()) {
        ch.queueDeclare(missing, true, false, false, Map.of());
      }
      try (java.sql.Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("UPDATE idem_outbox SET next_attempt_at = now() WHERE sent_at IS NULL");
      }
      assertThat(relay.relayOnce()).isEqualTo(4);
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL")).isZero();
      assertThat(drain(full)).containsExactly("A3", "A4");
      assertThat(drain(missing)).containsExactly("C1", "C2");
    } finally {
      relay.close();
      rabbit.close();
    }
  }
}
