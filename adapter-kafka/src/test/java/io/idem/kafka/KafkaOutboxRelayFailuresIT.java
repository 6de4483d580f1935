package io.idem.kafka;

import static io.idem.spi.OutboxPublishResult.Status.FAILED;
import static io.idem.spi.OutboxPublishResult.Status.SENT;
import static io.idem.spi.OutboxPublishResult.Status.SKIPPED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The outbox relay with the real Kafka producer and PostgreSQL: a broker that cannot be reached
 * for longer than maxAttempts × backoff charges no row, parks none and holds no transaction open
 * while the producer waits; a record too large for the producer is parked after one attempt while
 * other keys flow.
 */
class KafkaOutboxRelayFailuresIT {
  private HikariDataSource pool;
  /** The test's own queries: another application_name than the relay's sessions. */
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private String topic;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @BeforeEach
  void setUp() {
    pool = PostgresFixture.shared().newSchema("kafka_outbox_failures");
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    observer = PostgresFixture.shared().dataSource("public", 2);
    topic = KafkaTestClients.uniqueTopic("outbox-failures");
    KafkaTestClients.kafka().createTopic(topic, 3);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : closeables) {
      c.close();
    }
    KafkaTestClients.kafka().deleteTopic(topic);
    observer.close();
    pool.close();
  }

  private <T extends AutoCloseable> T closing(T closeable) {
    closeables.add(0, closeable); // closed in reverse order: relays before their publishers
    return closeable;
  }

  private void enqueue(List<OutboxEntry> entries) {
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      entries.forEach(e -> assertThat(outbox.enqueue(session, e)).isTrue());
      session.commit();
    }
  }

  private long count(String sql) throws Exception {
    String qualified = sql.replace("idem_outbox", pool.getSchema() + ".idem_outbox");
    try (Connection c = observer.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(qualified)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static int closedPort() throws Exception {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** The relay's own sessions with a transaction open, seen from another session. */
  private long openTransactionsOfTheRelay(String applicationName) throws Exception {
    try (Connection c = observer.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
            + applicationName + "' AND xact_start IS NOT NULL AND pid <> pg_backend_pid()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Delegates to the unreachable broker's producer during the outage, then to the real one. */
  private static final class SwitchingPublisher implements OutboxPublisher {
    volatile OutboxPublisher current;
    final AtomicInteger outageFailures = new AtomicInteger();
    final List<String> violations = new CopyOnWriteArrayList<>();
    volatile ThrowingCheck beforeEachPublish = () -> {};

    interface ThrowingCheck {
      void run() throws Exception;
    }

    SwitchingPublisher(OutboxPublisher first) {
      current = first;
    }

    @Override
    public void publish(OutboxMessage message) throws Exception {
      OutboxPublisher p = current;
      beforeEachPublish.run();
      try {
        p.publish(message);
      } catch (Exception e) {
        outageFailures.incrementAndGet();
        throw e;
      }
    }

    /** The relay's path: the batch through the current producer's publishAll. */
    @Override
    public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
      OutboxPublisher p = current;
      beforeEachPublish.run();
      List<OutboxPublishResult> results = p.publishAll(messages);
      outageFailures.addAndGet((int) results.stream().filter(r -> r.status() == OutboxPublishResult.Status.FAILED).count());
      return results;
    }
  }

  /**
   * The producer points at a port nothing listens on (the broker is down) for longer than
   * maxAttempts × maxBackoff, while the relay keeps probing: each probe is one row failing with
   * Kafka's metadata TimeoutException, the batch ends there, nothing is charged. While the
   * producer waits, the relay holds no transaction open (checked at each publish from another
   * session: a round running beside the publish ends without it). Back on the live broker every row is sent with attempts = 1, none parked.
   */
  @Test
  void aBrokerOutageChargesNoRowParksNoneAndHoldsNoTransaction() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      entries.add(new OutboxEntry("outage-" + i, topic, i % 2 == 0 ? "order-" + (i % 4) : null,
          ("row " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
    }
    enqueue(entries);
    Duration sendTimeout = Duration.ofMillis(500);
    KafkaOutboxPublisher down = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + closedPort()), sendTimeout));
    KafkaOutboxPublisher live = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap()), Duration.ofSeconds(30)));
    SwitchingPublisher publisher = new SwitchingPublisher(down);
    String applicationName = PostgresFixture.applicationName(pool.getSchema());
    publisher.beforeEachPublish = () -> {
      // The pipelined relay may be in a round (the previous batch's marks, the next claim: one
      // short transaction) as a publish starts; it must end without waiting for this publish.
      long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
      long open = openTransactionsOfTheRelay(applicationName);
      while (open > 0 && System.nanoTime() < deadline) {
        Thread.sleep(5);
        open = openTransactionsOfTheRelay(applicationName);
      }
      if (open > 0) {
        publisher.violations.add(open + " relay transaction(s) still open 5 s into a publish");
      }
    };
    int maxAttempts = 3;
    Duration backoff = Duration.ofMillis(100);
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(backoff)
        .maxBackoff(backoff.multipliedBy(2)).jitter(0).build();
    OutboxRelay relay = closing(OutboxRelay.builder(sessions, publisher).batchSize(10)
        .pollInterval(Duration.ofMillis(50)).retryPolicy(policy).name("kafka-outage-relay").build());
    relay.start();

    // Long enough that today's relay would have parked every row: more failed probes than
    // maxAttempts, over more than maxAttempts × maxBackoff.
    long outageStart = System.nanoTime();
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() ->
        publisher.outageFailures.get() >= 2 * maxAttempts
            && System.nanoTime() - outageStart > policy.maxBackoff().multipliedBy(maxAttempts).toNanos());
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts > 0 OR parked_at IS NOT NULL"))
        .as("rows charged or parked during the outage").isZero();
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL")).isEqualTo(20);
    assertThat(relay.isRunning()).isTrue();
    assertThat(relay.health().lastError()).contains("TimeoutException");
    assertThat(relay.lastStats().failures()).as("no failure counted against a row").isZero();

    publisher.current = live;
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE attempts <> 1 OR parked_at IS NOT NULL")).isZero();
    assertThat(publisher.violations).isEmpty();
    assertThat(receivedKeys(20)).hasSize(20);
  }

  /**
   * A record larger than the producer's max.request.size: Kafka's RecordTooLargeException comes
   * wrapped in an ExecutionException; declared non-retryable, the row is parked after one attempt,
   * the row behind it with its ordering key waits, and rows of other keys are sent.
   */
  @Test
  void aRecordTooLargeIsParkedAfterOneAttemptAndOtherKeysFlow() throws Exception {
    enqueue(List.of(
        new OutboxEntry("big", topic, "A", new byte[20_000], Map.of()),
        new OutboxEntry("after-big", topic, "A", "small".getBytes(StandardCharsets.UTF_8), Map.of()),
        new OutboxEntry("b1", topic, "B", "small".getBytes(StandardCharsets.UTF_8), Map.of()),
        new OutboxEntry("b2", topic, "B", "small".getBytes(StandardCharsets.UTF_8), Map.of()),
        new OutboxEntry("free", topic, null, "small".getBytes(StandardCharsets.UTF_8), Map.of())));
    KafkaOutboxPublisher publisher = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap(),
        ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 10_000), Duration.ofSeconds(30)));
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(50))
        .nonRetryable(RecordTooLargeException.class).build();
    OutboxRelay relay = closing(OutboxRelay.builder(sessions, publisher).pollInterval(Duration.ofMillis(50))
        .retryPolicy(policy).name("kafka-too-large-relay").build());
    relay.start();

    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
        .until(() -> count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL") == 3);
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() ->
        count("SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'big' AND parked_at IS NOT NULL") == 1);
    assertThat(count("SELECT attempts FROM idem_outbox WHERE idempotency_key = 'big'")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'big'"
        + " AND last_error LIKE '%RecordTooLargeException%'")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'after-big'"
        + " AND sent_at IS NULL AND attempts = 0")).as("held behind the parked row of its key").isEqualTo(1);
    assertThat(receivedKeys(3)).containsExactlyInAnyOrder("b1", "b2", "free");
    assertThat(relay.isRunning()).isTrue();
  }

  /**
   * One batch of keys A, B and unordered rows with a record too large in the middle of A: the
   * producer refuses it at send, so A stops there — its later rows are not sent and stay due,
   * uncharged — while B and the unordered rows are sent in the same batch. The big row is parked
   * after one attempt. Nothing is lost or reordered: what Kafka holds of each key is a prefix of
   * that key's rows in id order, and once the big row is made small and unparked, A drains in
   * order.
   */
  @Test
  void aRecordTooLargeMidBatchStopsItsKeyWhileOtherKeysOfTheBatchAreSent() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 6; i++) {
      entries.add(new OutboxEntry("A-" + i, topic, "A", (i == 3 ? new byte[20_000] : ("A " + i).getBytes(StandardCharsets.UTF_8)), Map.of()));
      entries.add(new OutboxEntry("B-" + i, topic, "B", ("B " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
      entries.add(new OutboxEntry("free-" + i, topic, null, ("free " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
    }
    enqueue(entries);
    KafkaOutboxPublisher kafka = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap(),
        ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 10_000), Duration.ofSeconds(30)));
    List<List<OutboxPublishResult>> batches = new CopyOnWriteArrayList<>();
    OutboxPublisher recording = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("the relay publishes Kafka batches with publishAll");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        List<OutboxPublishResult> results = kafka.publishAll(messages);
        batches.add(results);
        return results;
      }
    };
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(50))
        .nonRetryable(RecordTooLargeException.class).build();
    OutboxRelay relay = closing(OutboxRelay.builder(sessions, recording).batchSize(50)
        .pollInterval(Duration.ofMillis(50)).retryPolicy(policy).name("kafka-mid-batch-relay").build());

    assertThat(relay.relayOnce()).isEqualTo(18);

    assertThat(batches).singleElement().satisfies(results -> assertThat(results)
        .extracting(OutboxPublishResult::status).containsExactly(
            SENT, SENT, SENT, SENT, SENT, SENT, FAILED, SENT, SENT, // A-3 refused
            SKIPPED, SENT, SENT, SKIPPED, SENT, SENT, SKIPPED, SENT, SENT));
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL")).isEqualTo(14);
    assertThat(count("SELECT count(DISTINCT sent_at) FROM idem_outbox WHERE sent_at IS NOT NULL"))
        .as("the batch's sent rows marked in one statement").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'A-3' AND parked_at IS NOT NULL"
        + " AND attempts = 1 AND last_error LIKE '%RecordTooLargeException%'")).isEqualTo(1);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A-4', 'A-5', 'A-6')"
        + " AND sent_at IS NULL AND attempts = 0 AND parked_at IS NULL AND leased_by IS NULL")).isEqualTo(3);
    Map<String, List<String>> perKey = receivedPayloadsPerKey(14);
    assertThat(perKey.get("A")).containsExactly("A 1", "A 2");
    assertThat(perKey.get("B")).containsExactly("B 1", "B 2", "B 3", "B 4", "B 5", "B 6");
    assertThat(perKey.get(null)).hasSize(6);

    // The operator shrinks the record and unparks it: A goes on, in order.
    try (SqlSession session = sessions.openSession(true)) {
      long id = count("SELECT id FROM idem_outbox WHERE idempotency_key = 'A-3'");
      try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
        s.executeUpdate("UPDATE idem_outbox SET payload = convert_to('A 3', 'UTF8') WHERE id = " + id);
      }
      assertThat(Outbox.ofDefaults().unpark(session, id)).isTrue();
    }
    assertThat(relay.relayOnce()).isEqualTo(4);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL")).isZero();
    assertThat(receivedPayloadsPerKey(18).get("A")).containsExactly("A 1", "A 2", "A 3", "A 4", "A 5", "A 6");
  }

  /**
   * The broker goes away in the middle of a batch: the first rows of the batch reach the live
   * broker, the rest meet an unreachable one (no metadata within the send timeout). The
   * confirmed rows are marked sent, the others are charged nothing, parked never, and the relay
   * backs off; back on the live broker, every row is sent once more at most, each key in order.
   */
  @Test
  void anOutageMidBatchChargesNothingAndLosesOrReordersNothing() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 5; i++) {
      entries.add(new OutboxEntry("A-" + i, topic, "A", ("A " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
      entries.add(new OutboxEntry("B-" + i, topic, "B", ("B " + i).getBytes(StandardCharsets.UTF_8), Map.of()));
    }
    enqueue(entries);
    KafkaOutboxPublisher down = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + closedPort()), Duration.ofMillis(500)));
    KafkaOutboxPublisher live = closing(KafkaOutboxPublisher.create(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap()), Duration.ofSeconds(30)));
    AtomicInteger reachable = new AtomicInteger(4); // rows of the next batch the broker still takes
    OutboxPublisher dying = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("the relay publishes Kafka batches with publishAll");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        int k = Math.min(reachable.get(), messages.size());
        List<OutboxPublishResult> results = new ArrayList<>(live.publishAll(messages.subList(0, k)));
        results.addAll(down.publishAll(messages.subList(k, messages.size())));
        return results;
      }
    };
    RetryPolicy policy = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(200)).jitter(0).build();
    OutboxRelay relay = closing(OutboxRelay.builder(sessions, dying).batchSize(50)
        .pollInterval(Duration.ofMillis(50)).retryPolicy(policy).name("kafka-mid-batch-outage").build());

    assertThat(relay.relayOnce()).isEqualTo(10);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL")).isEqualTo(4);
    reachable.set(0);
    for (int i = 0; i < 3; i++) { // more outages in a row than maxAttempts
      assertThat(relay.relayOnce()).isEqualTo(6);
    }
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL AND attempts = 0"
        + " AND parked_at IS NULL AND leased_by IS NULL")).as("nothing charged during the outage").isEqualTo(6);
    assertThat(relay.health().destinationUnavailableUntil()).isNotNull();
    assertThat(relay.lastStats().failures()).isZero();

    reachable.set(Integer.MAX_VALUE);
    assertThat(relay.relayOnce()).isEqualTo(6);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL OR attempts <> 1 OR parked_at IS NOT NULL")).isZero();
    Map<String, List<String>> perKey = receivedPayloadsPerKey(10);
    assertThat(perKey.get("A")).containsExactly("A 1", "A 2", "A 3", "A 4", "A 5");
    assertThat(perKey.get("B")).containsExactly("B 1", "B 2", "B 3", "B 4", "B 5");
  }

  /** What the topic holds, payloads per record key (null: keyed by the idempotency key), in offset order. */
  private Map<String, List<String>> receivedPayloadsPerKey(int count) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap());
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    Map<String, List<String>> perKey = new HashMap<>();
    int received = 0;
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      while (System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          String key = new String(r.key(), StandardCharsets.UTF_8);
          String idempotencyKey = new String(r.headers().lastHeader(OutboxMessage.KEY_HEADER).value(), StandardCharsets.UTF_8);
          perKey.computeIfAbsent(key.equals(idempotencyKey) ? null : key, k -> new ArrayList<>())
              .add(new String(r.value(), StandardCharsets.UTF_8));
          received++;
        }
        if (received >= count) {
          break;
        }
      }
      consumer.poll(Duration.ofMillis(300)).forEach(r -> {
        throw new AssertionError("more records than expected: " + new String(r.value(), StandardCharsets.UTF_8));
      });
    }
    return perKey;
  }

  private Set<String> receivedKeys(int count) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaTestClients.bootstrap());
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    Set<String> keys = new HashSet<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      while (keys.size() < count && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          keys.add(new String(r.headers().lastHeader(OutboxMessage.KEY_HEADER).value(), StandardCharsets.UTF_8));
        }
      }
      consumer.poll(Duration.ofMillis(500)).forEach(r ->
          keys.add(new String(r.headers().lastHeader(OutboxMessage.KEY_HEADER).value(), StandardCharsets.UTF_8)));
    }
    return keys;
  }
}
