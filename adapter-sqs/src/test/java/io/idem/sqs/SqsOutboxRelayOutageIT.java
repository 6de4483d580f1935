package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.fixtures.TcpProxy;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
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
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The outbox relay publishing to ElasticMQ (or the configured SQS) through a TCP proxy that the
 * test cuts for longer than maxAttempts × backoff: the SDK's client-side failures are a
 * destination outage, no row is charged or parked, and all rows go out once it is restored.
 */
class SqsOutboxRelayOutageIT {
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private TcpProxy proxy;
  private SqsClient direct;
  private SqsClient proxied;
  private String queueUrl;
  private OutboxRelay relay;

  @BeforeEach
  void setUp() throws Exception {
    pool = PostgresFixture.shared().newSchema("sqs_outbox_outage");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    direct = SqsFixture.shared().newClient();
    queueUrl = SqsFixture.shared().createQueue(direct, "idem-outage-" + UUID.randomUUID().toString().substring(0, 8) + ".fifo", Map.of());
    URI endpoint = SqsFixture.shared().endpoint();
    proxy = new TcpProxy(endpoint.getHost(), endpoint.getPort());
    proxied = SqsFixture.shared().configure(SqsClient.builder())
        .endpointOverride(URI.create(endpoint.getScheme() + "://127.0.0.1:" + proxy.port())).build();
  }

  @AfterEach
  void tearDown() throws Exception {
    if (relay != null) {
      relay.close();
    }
    proxied.close();
    proxy.close();
    SqsFixture.shared().deleteQueue(direct, queueUrl);
    direct.close();
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
  void anUnreachableEndpointChargesNoRowAndEveryRowIsSentWhenItComesBack() throws Exception {
    unreachable(false);
  }

  /** The same through {@link SqsOutboxPublisher#publishAll}: {@code SendMessageBatch} requests. */
  @Test
  void anUnreachableEndpointChargesNoRowOfABatchAndEveryRowIsSentWhenItComesBack() throws Exception {
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
    SqsOutboxPublisher sqs = SqsOutboxPublisher.create(proxied);
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
      public java.util.List<io.idem.spi.OutboxPublishResult> publishAll(java.util.List<io.idem.spi.OutboxMessage> messages) {
        java.util.List<io.idem.spi.OutboxPublishResult> results = sqs.publishAll(messages);
        failed.addAndGet((int) results.stream()
            .filter(r -> r.status() == io.idem.spi.OutboxPublishResult.Status.FAILED).count());
        return results;
      }
    };
    OutboxPublisher counting = batches ? batching : oneByOne;
    int maxAttempts = 3;
    Duration backoff = Duration.ofMillis(100);
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(backoff)
        .maxBackoff(backoff.multipliedBy(2)).jitter(0).build();
    proxy.cut();
    relay = OutboxRelay.builder(sessions, counting).batchSize(5).pollInterval(Duration.ofMillis(50))
        .retryPolicy(policy).name("sqs-outage-relay").build();
    relay.start();

    long outageStart = System.nanoTime();
    await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(50)).until(() ->
        failed.get() >= 2 * maxAttempts
            && System.nanoTime() - outageStart > policy.maxBackoff().multipliedBy(maxAttempts).toNanos());
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts > 0 OR parked_at IS NOT NULL"))
        .as("rows charged or parked during the outage").isZero();
    assertThat(relay.isRunning()).isTrue();
    assertThat(relay.health().lastError()).contains("SdkClientException");

    proxy.restore();
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts <> 1 OR parked_at IS NOT NULL")).isZero();
    Set<String> bodies = new HashSet<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (bodies.size() < 10 && System.nanoTime() < deadline) {
      for (Message m : direct.receiveMessage(b -> b.queueUrl(queueUrl).maxNumberOfMessages(10).waitTimeSeconds(1)).messages()) {
        bodies.add(m.body());
        direct.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
      }
    }
    assertThat(bodies).hasSize(10);
  }
}
