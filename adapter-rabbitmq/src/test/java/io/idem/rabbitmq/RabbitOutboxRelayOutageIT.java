package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.TcpProxy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
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

/**
 * The outbox relay publishing to the local RabbitMQ through a TCP proxy that the test cuts: the
 * relay's connection drops and every reconnect is refused for longer than maxAttempts × backoff.
 * No row is charged or parked; when the proxy lets traffic through again the connection recovers
 * and every row is published with attempts = 1.
 */
class RabbitOutboxRelayOutageIT {
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private TcpProxy proxy;
  private Connection proxied;
  private Connection direct;
  private String queue;
  private OutboxRelay relay;

  @BeforeEach
  void setUp() throws Exception {
    pool = PostgresFixture.shared().newSchema("rabbit_outbox_outage");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    ConnectionFactory factory = RabbitFixture.shared().connectionFactory();
    direct = factory.newConnection("idem-test-outbox-outage-direct");
    queue = "idem-test-outbox-outage-" + UUID.randomUUID();
    try (Channel ch = direct.createChannel()) {
      ch.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
    }
    proxy = new TcpProxy(factory.getHost(), factory.getPort());
    ConnectionFactory viaProxy = RabbitFixture.shared().connectionFactory();
    viaProxy.setHost("127.0.0.1");
    viaProxy.setPort(proxy.port());
    viaProxy.setAutomaticRecoveryEnabled(true);
    viaProxy.setNetworkRecoveryInterval(200);
    viaProxy.setConnectionTimeout(2_000);
    proxied = viaProxy.newConnection("idem-test-outbox-outage-relay");
  }

  @AfterEach
  void tearDown() throws Exception {
    if (relay != null) {
      relay.close();
    }
    proxied.abort();
    proxy.close();
    try (Channel ch = direct.createChannel()) {
      ch.queueDelete(queue);
    }
    direct.close();
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

  @Test
  void aLostConnectionChargesNoRowAndEveryRowIsPublishedWhenItComesBack() throws Exception {
    lostConnection(false);
  }

  /** The same through {@link RabbitOutboxPublisher#publishAll}: batches, one wait for the confirms. */
  @Test
  void aLostConnectionChargesNoRowOfABatchAndEveryRowIsPublishedWhenItComesBack() throws Exception {
    lostConnection(true);
  }

  private void lostConnection(boolean batches) throws Exception {
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      for (int i = 0; i < 20; i++) {
        outbox.enqueue(session, new OutboxEntry("outage-" + i, queue, i % 2 == 0 ? "key-" + (i % 4) : null,
            ("row " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
      }
      session.commit();
    }
    RabbitOutboxPublisher rabbit = RabbitOutboxPublisher.create(proxied, "", Duration.ofSeconds(2));
    AtomicInteger failed = new AtomicInteger();
    OutboxPublisher oneByOne = message -> {
      try {
        rabbit.publish(message);
      } catch (Exception e) {
        failed.incrementAndGet();
        throw e;
      }
    };
    OutboxPublisher batching = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) throws Exception {
        oneByOne.publish(message);
      }

      @Override
      public List<io.idem.spi.OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        try {
          List<io.idem.spi.OutboxPublishResult> results = rabbit.publishAll(messages);
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
    relay = OutboxRelay.builder(sessions, counting).batchSize(10).pollInterval(Duration.ofMillis(50))
        .retryPolicy(policy).name("rabbit-outage-relay").build();
    relay.start();

    long outageStart = System.nanoTime();
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() ->
        failed.get() >= 2 * maxAttempts
            && System.nanoTime() - outageStart > policy.maxBackoff().multipliedBy(maxAttempts).toNanos());
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts > 0 OR parked_at IS NOT NULL"))
        .as("rows charged or parked during the outage").isZero();
    assertThat(relay.isRunning()).isTrue();
    assertThat(relay.lastStats().failures()).isZero();

    proxy.restore();
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts <> 1 OR parked_at IS NOT NULL")).isZero();
    Set<String> keys = new HashSet<>();
    try (Channel ch = direct.createChannel()) {
      for (GetResponse r; (r = ch.basicGet(queue, true)) != null; ) {
        keys.add(String.valueOf(r.getProps().getHeaders().get(OutboxMessage.KEY_HEADER)));
      }
    }
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      expected.add("outage-" + i);
    }
    assertThat(keys).containsExactlyInAnyOrderElementsOf(expected);
  }
}
