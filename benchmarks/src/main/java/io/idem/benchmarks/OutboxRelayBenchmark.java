package io.idem.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.kafka.KafkaOutboxPublisher;
import io.idem.rabbitmq.RabbitOutboxPublisher;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Rows/s of the transactional outbox's relay ({@link OutboxRelay}: claim a batch in a short
 * transaction, publish it with the broker's {@link OutboxPublisher}, mark it sent) against a plain
 * producer loop publishing the same rows with the same durability — Kafka: {@code acks=all},
 * idempotent producer, every send then one flush; RabbitMQ: persistent, mandatory messages on a
 * confirm channel, confirms awaited every {@code --batch-size} messages — in interleaved rounds of
 * one invocation, for rows of one hot ordering key and for unordered rows; and the time of one
 * claim over 1,000 and over 100,000 rows blocked behind a parked head row (it must stay flat).
 * Each run publishes {@code --rows} rows (default 50,000: the plain Kafka loop runs for about a
 * second, so both sides run warm), after {@code --warmup} untimed rounds of every variant. A relay
 * run ends when the relay has marked every row sent ({@link OutboxRelay#lastStats()}'s {@code
 * published}, read from memory: no query beside the relay's own). Prints {@code RESULT} lines per
 * run and {@code RATIO} lines per round. BENCHMARKS.md, "Outbox relay".
 */
@Command(name = "OutboxRelayBenchmark", mixinStandardHelpOptions = true)
public final class OutboxRelayBenchmark implements Callable<Integer> {
  private static final byte[] PAYLOAD = ("{\"type\":\"Receipt\",\"orderId\":\"o-0000000000\",\"amount\":4200,"
      + "\"currency\":\"EUR\",\"issuedAt\":\"2026-12-03T06:00:00Z\",\"lines\":[{\"sku\":\"s-1\",\"qty\":1}]}")
      .getBytes(StandardCharsets.UTF_8);

  @Option(names = "--broker", defaultValue = "all", description = "kafka, rabbitmq or all.")
  String broker = "all";

  @Option(names = "--rows", defaultValue = "50000", description = "Rows per run.")
  int rows;

  @Option(names = "--rounds", defaultValue = "3", description = "Interleaved rounds.")
  int rounds;

  @Option(names = "--warmup", defaultValue = "1", description = "Untimed rounds of every variant first.")
  int warmup;

  @Option(names = "--batch-size", defaultValue = "0",
      description = "The relay's batchSize (0: the relay's default for the publisher); RabbitMQ's confirm window.")
  int batchSize;

  @Option(names = "--blocked", split = ",", defaultValue = "1000,100000",
      description = "Rows behind a parked head row for the claim-time runs (0: none).")
  int[] blocked = {1000, 100000};

  @Option(names = "--claims", defaultValue = "50", description = "Claims timed per claim-time run.")
  int claims;

  public static void main(String[] args) {
    System.exit(new CommandLine(new OutboxRelayBenchmark()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    PostgresFixture postgres = PostgresFixture.shared();
    String schema = "outbox_bench_" + UUID.randomUUID().toString().substring(0, 8);
    postgres.createSchema(schema);
    List<String> brokers = broker.equals("all") ? List.of("kafka", "rabbitmq") : List.of(broker.toLowerCase(Locale.ROOT));
    int window = batchSize > 0 ? batchSize : OutboxRelay.DEFAULT_PUBLISH_ALL_BATCH_SIZE; // the brokers' publishers batch
    try (com.zaxxer.hikari.HikariDataSource dataSource = postgres.dataSource(schema, 4)) {
      SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(
          new Configuration(new Environment("outbox-bench", new JdbcTransactionFactory(), dataSource)));
      Outbox.createTableIfMissing(dataSource, Outbox.DEFAULT_TABLE);
      System.out.println("# outbox relay vs a plain producer loop: " + rows + " rows per run, batchSize "
          + (batchSize > 0 ? batchSize : window + " (the relay's default)") + ", " + warmup + " warm-up and " + rounds
          + " rounds, brokers " + brokers + ", load " + loadAverage());
      for (String b : brokers) {
        try (Broker target = Broker.open(b, window)) {
          for (int round = 1 - warmup; round <= 0; round++) {
            plainLoop(target, round);
            relayRun(target, sessions, dataSource, false, round);
            relayRun(target, sessions, dataSource, true, round);
          }
          for (int round = 1; round <= rounds; round++) {
            double plain = plainLoop(target, round);
            double unordered = relayRun(target, sessions, dataSource, false, round);
            double hot = relayRun(target, sessions, dataSource, true, round);
            System.out.printf(Locale.ROOT, "RATIO broker=%s round=%d relay-unordered/plain=%.2f relay-hot-key/plain=%.2f"
                + " relay-hot-key/relay-unordered=%.2f load=%s%n", b, round, unordered / plain, hot / plain,
                hot / unordered, loadAverage());
          }
          for (int n : blocked) {
            if (n > 0) {
              claimTime(target, sessions, dataSource, n);
            }
          }
        }
      }
      try (var c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA " + schema + " CASCADE");
      }
    }
    return 0;
  }

  /** The plain producer loop: the same rows, the same durability, no database. */
  private double plainLoop(Broker target, int round) throws Exception {
    String destination = target.freshDestination("plain-" + round);
    long start = System.nanoTime();
    target.publishPlain(destination, rows);
    double seconds = (System.nanoTime() - start) / 1e9;
    long arrived = target.count(destination);
    report(target.name, "plain-producer", round, seconds, arrived);
    return rows / seconds;
  }

  private double relayRun(Broker target, SqlSessionFactory sessions, DataSource dataSource, boolean hotKey, int round)
      throws Exception {
    String destination = target.freshDestination((hotKey ? "hot-" : "unordered-") + round);
    enqueueBulk(dataSource, destination, rows, hotKey ? "hot-" + round : null, "row-");
    OutboxRelay.Builder builder = OutboxRelay.builder(sessions, target.publisher())
        .statsInterval(Duration.ofHours(1))
        .name("bench-" + destination);
    if (batchSize > 0) {
      builder.batchSize(batchSize);
    }
    OutboxRelay relay = builder.build();
    long start = System.nanoTime();
    relay.start();
    try {
      while (relay.lastStats().published() < rows) { // the rows marked sent; from memory, no query
        if (!relay.isRunning()) {
          throw new IllegalStateException("the relay stopped: " + relay.health());
        }
        Thread.sleep(1);
      }
    } finally {
      relay.close();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    report(target.name, hotKey ? "relay-hot-key" : "relay-unordered", round, seconds, target.count(destination));
    try (var c = dataSource.getConnection(); Statement st = c.createStatement()) { // the next run starts alike
      st.execute("VACUUM ANALYZE " + Outbox.DEFAULT_TABLE); // the sent rows stay, as with a retention period
    }
    return rows / seconds;
  }

  /**
   * One claim ({@link OutboxRelay#relayOnce()}: one due row of another key published and marked)
   * with {@code blockedRows} rows of one key behind its parked head row.
   */
  private void claimTime(Broker target, SqlSessionFactory sessions, DataSource dataSource, int blockedRows)
      throws Exception {
    String destination = target.freshDestination("claims-" + blockedRows);
    String blockedKey = "blocked-" + blockedRows;
    enqueueBulk(dataSource, destination, blockedRows, blockedKey, "blocked-");
    try (var c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("UPDATE " + Outbox.DEFAULT_TABLE + " SET parked_at = now(), last_error = 'bench'"
          + " WHERE id = (SELECT min(id) FROM " + Outbox.DEFAULT_TABLE + " WHERE ordering_key = '" + blockedKey + "')");
      s.execute("ANALYZE " + Outbox.DEFAULT_TABLE);
    }
    enqueue(sessions, destination, claims, null, blockedRows);
    OutboxRelay relay = OutboxRelay.builder(sessions, target.publisher())
        .batchSize(1)
        .statsInterval(Duration.ofHours(1))
        .name("bench-claims-" + blockedRows)
        .build();
    long[] nanos = new long[claims];
    try {
      for (int i = 0; i < claims; i++) {
        long t0 = System.nanoTime();
        int published = relay.relayOnce();
        nanos[i] = System.nanoTime() - t0;
        if (published != 1) {
          throw new IllegalStateException("claim " + i + " over " + blockedRows + " blocked rows published "
              + published + " rows, not 1");
        }
      }
    } finally {
      relay.close();
    }
    Arrays.sort(nanos);
    System.out.printf(Locale.ROOT, "RESULT broker=%s variant=claim blocked=%d claims=%d median-ms=%.2f p90-ms=%.2f"
            + " (claim, publish of one row and its mark) load=%s%n", target.name, blockedRows, claims,
        nanos[claims / 2] / 1e6, nanos[(int) (claims * 0.9)] / 1e6, loadAverage());
    try (var c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.executeUpdate("DELETE FROM " + Outbox.DEFAULT_TABLE + " WHERE destination = '" + destination + "'");
    }
  }

  private void enqueue(SqlSessionFactory sessions, String destination, int count, @Nullable String orderingKey,
      int offset) {
    int perTransaction = 500;
    for (int from = 0; from < count; from += perTransaction) {
      try (SqlSession session = sessions.openSession(false)) {
        Outbox outbox = Outbox.ofDefaults();
        for (int i = from; i < Math.min(count, from + perTransaction); i++) {
          OutboxEntry entry = new OutboxEntry("row-" + (offset + i), destination, null, PAYLOAD, Map.of());
          outbox.enqueue(session, orderingKey == null ? entry : entry.orderedBy(orderingKey));
        }
        session.commit();
      }
    }
  }

  /**
   * {@code count} rows of {@code orderingKey} (or none), keys {@code keyPrefix + n}, in one INSERT
   * … SELECT: the rows {@link Outbox#enqueue} writes (the relay runs' rows, the claim-time runs'
   * backlog), enqueued in a second instead of one round trip per row.
   */
  private static void enqueueBulk(DataSource dataSource, String destination, int count, @Nullable String orderingKey,
      String keyPrefix) throws Exception {
    try (var c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
        "INSERT INTO " + Outbox.DEFAULT_TABLE + " (idempotency_key, destination, ordering_key, payload)"
            + " SELECT ? || g, ?, ?, ? FROM generate_series(0, ? - 1) g ORDER BY g")) {
      ps.setString(1, keyPrefix);
      ps.setString(2, destination);
      ps.setString(3, orderingKey);
      ps.setBytes(4, PAYLOAD);
      ps.setInt(5, count);
      ps.executeUpdate();
    }
  }

  private void report(String brokerName, String variant, int round, double seconds, long arrived) {
    if (round <= 0) { // a warm-up run: checked, not reported
      if (arrived < rows) {
        throw new IllegalStateException(variant + " on " + brokerName + ": " + arrived + " of " + rows + " arrived");
      }
      return;
    }
    System.out.printf(Locale.ROOT, "RESULT broker=%s variant=%s round=%d rows=%d rows/s=%.0f arrived=%d load=%s%n",
        brokerName, variant, round, rows, rows / seconds, arrived, loadAverage());
    if (arrived < rows) {
      throw new IllegalStateException(variant + " on " + brokerName + ": " + arrived + " of " + rows + " arrived");
    }
  }

  private static String loadAverage() {
    try {
      return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ")[0];
    } catch (Exception e) {
      return "?";
    }
  }

  /** One broker: its publisher for the relay, the plain loop, destinations and their counts. */
  private abstract static class Broker implements AutoCloseable {
    final String name;
    final int window;

    Broker(String name, int window) {
      this.name = name;
      this.window = window;
    }

    static Broker open(String name, int window) throws Exception {
      return switch (name) {
        case "kafka" -> new KafkaBroker(window);
        case "rabbitmq" -> new RabbitBroker(window);
        default -> throw new IllegalArgumentException("--broker takes kafka, rabbitmq or all, not " + name);
      };
    }

    abstract String freshDestination(String label) throws Exception;

    abstract OutboxPublisher publisher() throws Exception;

    abstract void publishPlain(String destination, int count) throws Exception;

    abstract long count(String destination) throws Exception;
  }

  private static final class KafkaBroker extends Broker {
    private final KafkaFixture kafka = KafkaFixture.shared();
    private final KafkaProducer<byte[], byte[]> producer;
    private final List<KafkaOutboxPublisher> publishers = new ArrayList<>();

    KafkaBroker(int window) {
      super("kafka", window);
      producer = new KafkaProducer<>(Map.of(
          ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
          ProducerConfig.ACKS_CONFIG, "all",
          ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true), new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    String freshDestination(String label) {
      String topic = "outbox-bench-" + label + "-" + UUID.randomUUID().toString().substring(0, 8);
      kafka.createTopic(topic, 1);
      return topic;
    }

    @Override
    OutboxPublisher publisher() {
      KafkaOutboxPublisher publisher = KafkaOutboxPublisher.create(
          Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()));
      publishers.add(publisher);
      return publisher;
    }

    @Override
    void publishPlain(String destination, int count) throws Exception {
      List<Future<RecordMetadata>> sent = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        sent.add(producer.send(new ProducerRecord<>(destination, ("row-" + i).getBytes(StandardCharsets.UTF_8), PAYLOAD)));
      }
      producer.flush();
      for (Future<RecordMetadata> f : sent) {
        f.get(60, TimeUnit.SECONDS);
      }
    }

    @Override
    long count(String destination) throws Exception {
      var partition = new org.apache.kafka.common.TopicPartition(destination, 0);
      return kafka.admin().listOffsets(Map.of(partition, org.apache.kafka.clients.admin.OffsetSpec.latest()))
          .all().get(60, TimeUnit.SECONDS).get(partition).offset();
    }

    @Override
    public void close() throws Exception {
      producer.close();
      for (KafkaOutboxPublisher p : publishers) {
        p.close();
      }
    }
  }

  private static final class RabbitBroker extends Broker {
    private final Connection connection;
    private final Channel admin;
    private final List<String> queues = new ArrayList<>();

    RabbitBroker(int window) throws Exception {
      super("rabbitmq", window);
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(RabbitFixture.shared().uri());
      connection = factory.newConnection("outbox-bench");
      admin = connection.createChannel();
    }

    @Override
    String freshDestination(String label) throws Exception {
      String queue = "outbox-bench-" + label + "-" + UUID.randomUUID().toString().substring(0, 8);
      admin.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
      queues.add(queue);
      return queue;
    }

    @Override
    OutboxPublisher publisher() {
      return RabbitOutboxPublisher.create(connection, "");
    }

    @Override
    void publishPlain(String destination, int count) throws Exception {
      try (Channel channel = connection.createChannel()) {
        channel.confirmSelect();
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder().deliveryMode(2).build();
        for (int i = 0; i < count; i++) {
          channel.basicPublish("", destination, true, props, PAYLOAD);
          if ((i + 1) % window == 0) {
            channel.waitForConfirmsOrDie(60_000);
          }
        }
        channel.waitForConfirmsOrDie(60_000);
      }
    }

    @Override
    long count(String destination) throws Exception {
      return admin.messageCount(destination);
    }

    @Override
    public void close() throws Exception {
      for (String q : queues) {
        admin.queueDelete(q);
      }
      connection.close();
    }
  }
}
