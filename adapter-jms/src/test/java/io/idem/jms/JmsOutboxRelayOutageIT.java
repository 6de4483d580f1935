package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.TcpProxy;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
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
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * The outbox relay publishing to Artemis through a TCP proxy that the test cuts for longer than
 * maxAttempts × backoff: the JMS client's connection failures (Artemis' not-connected, behind a
 * JMSException) are a destination outage, no row is charged or parked, and all rows go out once
 * it is restored.
 */
class JmsOutboxRelayOutageIT {
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private TcpProxy proxy;
  private ActiveMQConnectionFactory proxied;
  private String queueUrl;
  private OutboxRelay relay;

  @BeforeEach
  void setUp() throws Exception {
    pool = PostgresFixture.shared().newSchema("jms_outbox_outage");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    ArtemisFixture artemis = ArtemisFixture.shared();
    queueUrl = "idem-outage-" + UUID.randomUUID().toString().substring(0, 8);
    artemis.createQueue(queueUrl);
    URI endpoint = URI.create(artemis.url().replaceFirst("\\?.*", ""));
    proxy = new TcpProxy(endpoint.getHost(), endpoint.getPort());
    proxied = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + proxy.port() + "?callTimeout=2000",
        artemis.user(), artemis.password());
  }

  @AfterEach
  void tearDown() throws Exception {
    if (relay != null) {
      relay.close();
    }
    proxied.close();
    proxy.close();
    ArtemisFixture.shared().deleteQueue(queueUrl);
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

  @Test
  void anUnreachableBrokerChargesNoRowAndEveryRowIsSentWhenItComesBack() throws Exception {
    unreachable(false);
  }

  /** The same through {@link JmsOutboxPublisher#publishAll}: transacted batches. */
  @Test
  void anUnreachableBrokerChargesNoRowOfABatchAndEveryRowIsSentWhenItComesBack() throws Exception {
    unreachable(true);
  }

  private void unreachable(boolean batches) throws Exception {
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      for (int i = 0; i < 10; i++) {
        outbox.enqueue(session, new OutboxEntry("outage-" + i, queueUrl, i % 2 == 0 ? "key" : null,
            ("row " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
      }
      session.commit();
    }
    JmsOutboxPublisher sqs = JmsOutboxPublisher.create(proxied);
    AtomicInteger failed = new AtomicInteger();
    OutboxPublisher oneByOne = message -> {
      try {
        sqs.publish(message);
      } catch (Exception e) {
        failed.incrementAndGet();
        throw e;
      }
    };
    OutboxPublisher batching = new OutboxPublisher() {
      @Override
      public void publish(io.idem.spi.OutboxMessage message) throws Exception {
        oneByOne.publish(message);
      }

      @Override
      public java.util.List<io.idem.spi.OutboxPublishResult> publishAll(java.util.List<io.idem.spi.OutboxMessage> messages)
          throws Exception {
        try {
          java.util.List<io.idem.spi.OutboxPublishResult> results = sqs.publishAll(messages);
          failed.addAndGet((int) results.stream()
              .filter(r -> r.status() == io.idem.spi.OutboxPublishResult.Status.FAILED).count());
          return results;
        } catch (Exception e) {
          failed.incrementAndGet();
          throw e;
        }
      }
    };
    OutboxPublisher counting = batches ? batching : oneByOne;
    int maxAttempts = 3;
    Duration backoff = Duration.ofMillis(100);
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(backoff)
        .maxBackoff(backoff.multipliedBy(2)).jitter(0).build();
    proxy.cut();
    relay = OutboxRelay.builder(sessions, counting).batchSize(5).pollInterval(Duration.ofMillis(50))
        .retryPolicy(policy).name("jms-outage-relay").build();
    relay.start();

    long outageStart = System.nanoTime();
    await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(50)).until(() ->
        failed.get() >= 2 * maxAttempts
            && System.nanoTime() - outageStart > policy.maxBackoff().multipliedBy(maxAttempts).toNanos());
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts > 0 OR parked_at IS NOT NULL"))
        .as("rows charged or parked during the outage").isZero();
    assertThat(relay.isRunning()).isTrue();
    assertThat(relay.health().lastError()).containsAnyOf("ActiveMQNotConnectedException", "ActiveMQConnectionTimedOutException");

    proxy.restore();
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts <> 1 OR parked_at IS NOT NULL")).isZero();
    Set<String> bodies = new HashSet<>();
    try (jakarta.jms.Connection c = ArtemisFixture.shared().connectionFactory().createConnection();
        Session session = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer consumer = session.createConsumer(session.createQueue(queueUrl))) {
      c.start();
      for (Message m; bodies.size() < 10 && (m = consumer.receive(10_000)) != null; ) {
        bodies.add(m.getStringProperty("idempotency_key"));
      }
    }
    assertThat(bodies).hasSize(10);
  }
}
