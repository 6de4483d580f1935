package io.idem.jms;

import static io.idem.spi.OutboxPublishResult.Status.FAILED;
import static io.idem.spi.OutboxPublishResult.Status.SENT;
import static io.idem.spi.OutboxPublishResult.Status.SKIPPED;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import jakarta.jms.BytesMessage;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
 * The relay publishing batches to Artemis with {@link JmsOutboxPublisher#publishAll} (one
 * transacted session, one commit per batch) and PostgreSQL: a row that cannot be sent in the
 * middle of a key fails alone, its key's later rows are skipped uncharged, the other rows of the
 * batch are committed; each group keeps its order.
 */
class JmsOutboxRelayBatchIT {
  private final ArtemisFixture artemis = ArtemisFixture.shared();
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private String queue;

  @BeforeEach
  void setUp() {
    pool = PostgresFixture.shared().newSchema("jms_outbox_batch");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    queue = "idem-batch-" + UUID.randomUUID().toString().substring(0, 8);
    artemis.createQueue(queue);
  }

  @AfterEach
  void tearDown() {
    artemis.deleteQueue(queue);
    observer.close();
    pool.close();
  }

  private long count(String sql) throws Exception {
    String qualified = sql.replace("idem_outbox", pool.getSchema() + ".idem_outbox");
    try (Connection c = observer.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(qualified)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Bodies per JMSXGroupID (none: null), in arrival order. */
  private Map<String, List<String>> receive(int count) throws Exception {
    Map<String, List<String>> perGroup = new HashMap<>();
    int received = 0;
    try (jakarta.jms.Connection c = artemis.connectionFactory().createConnection();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = s.createConsumer(s.createQueue(queue))) {
      c.start();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (received < count && System.nanoTime() < deadline) {
        Message m = consumer.receive(500);
        if (m == null) {
          continue;
        }
        byte[] body = new byte[(int) ((BytesMessage) m).getBodyLength()];
        ((BytesMessage) m).readBytes(body);
        perGroup.computeIfAbsent(m.getStringProperty("JMSXGroupID"), g -> new ArrayList<>())
            .add(new String(body, StandardCharsets.UTF_8));
        received++;
      }
      assertThat(consumer.receive(300)).as("no more messages than expected").isNull();
    }
    return perGroup;
  }

  @Test
  void aRowThatCannotBeSentMidBatchStopsItsKeyWhileTheRestIsCommitted() throws Exception {
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      for (int i = 1; i <= 5; i++) {
        outbox.enqueue(session, new OutboxEntry("A-" + i, queue, "A", ("A-" + i).getBytes(StandardCharsets.UTF_8),
            i == 3 ? Map.of("not a property name", "x") : Map.of()));
        outbox.enqueue(session, new OutboxEntry("B-" + i, queue, "B", ("B-" + i).getBytes(StandardCharsets.UTF_8), Map.of()));
        outbox.enqueue(session, new OutboxEntry("free-" + i, queue, null, ("free-" + i).getBytes(StandardCharsets.UTF_8), Map.of()));
      }
      session.commit();
    }
    JmsOutboxPublisher jms = JmsOutboxPublisher.create(artemis.connectionFactory());
    List<List<OutboxPublishResult>> batches = new CopyOnWriteArrayList<>();
    OutboxPublisher recording = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("the relay publishes JMS batches with publishAll");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        List<OutboxPublishResult> results = jms.publishAll(messages);
        batches.add(results);
        return results;
      }
    };
    OutboxRelay relay = OutboxRelay.builder(sessions, recording).batchSize(50)
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMinutes(1)).jitter(0).build())
        .name("jms-batch-relay").build();
    try {
      assertThat(relay.relayOnce()).isEqualTo(15);

      assertThat(batches).singleElement().satisfies(results -> assertThat(results)
          .extracting(OutboxPublishResult::status).containsExactly(
              SENT, SENT, SENT, SENT, SENT, SENT, FAILED, SENT, SENT, SKIPPED, SENT, SENT, SKIPPED, SENT, SENT));
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'A-3' AND attempts = 1"
          + " AND sent_at IS NULL AND last_error LIKE '%not a property name%'")).isEqualTo(1);
      assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A-4', 'A-5')"
          + " AND attempts = 0 AND sent_at IS NULL AND leased_by IS NULL AND next_attempt_at <= now()")).isEqualTo(2);
      assertThat(count("SELECT count(DISTINCT sent_at) FROM idem_outbox WHERE sent_at IS NOT NULL")).isEqualTo(1);
      Map<String, List<String>> perGroup = receive(12);
      assertThat(perGroup.get("A")).containsExactly("A-1", "A-2");
      assertThat(perGroup.get("B")).containsExactly("B-1", "B-2", "B-3", "B-4", "B-5");
      assertThat(perGroup.get(null)).containsExactly("free-1", "free-2", "free-3", "free-4", "free-5");
    } finally {
      relay.close();
      jms.close();
    }
  }
}
