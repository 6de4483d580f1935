package io.idem.benchmarks;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.Acknowledgement;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Throughput of {@link IdempotentConsumer#process} on PostgreSQL, broker excluded: the
 * transaction for a new key (claim + one business insert + commit) and for a duplicate (a claim
 * that finds the committed marker, then the fingerprint read), one thread.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar} (PostgreSQL resolved like the tests:
 * IDEM_POSTGRES_URL, else 127.0.0.1:5432, else embedded). Results: BENCHMARKS.md.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 5)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "-Didem.testcontainers=false"})
@State(Scope.Benchmark)
public class PostgresPipelineBenchmark {
  private static final byte[] PAYLOAD =
      "{\"type\":\"OrderPaid\",\"orderId\":\"o-1\",\"amountCents\":4200,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);
  private static final Acknowledgement NO_BROKER = new Acknowledgement() {
    @Override public void ack() {}
    @Override public void retry(Duration delay) {}
    @Override public void deadLetter(io.idem.DeadLetterReason reason) {}
  };

  private HikariDataSource dataSource;
  private IdempotentConsumer<SqlSession> postgres;
  private final AtomicLong sequence = new AtomicLong();
  private InboundMessage duplicate;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("idem_bench");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE payments (order_id text NOT NULL, amount_cents bigint NOT NULL)");
    }
    var sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("bench", new JdbcTransactionFactory(), dataSource)));
    var store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    postgres = IdempotentConsumer.builder(store)
        .consumerGroup("bench")
        .handler((message, session) -> {
          try (PreparedStatement ps = session.getConnection()
              .prepareStatement("INSERT INTO payments (order_id, amount_cents) VALUES (?, ?)")) {
            ps.setString(1, message.header("idempotency-key"));
            ps.setLong(2, 4200);
            ps.executeUpdate();
          }
        })
        .build();
    duplicate = message("duplicate-key");
    postgres.process(duplicate, NO_BROKER);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    dataSource.close();
  }

  private static InboundMessage message(String key) {
    return InboundMessage.builder("orders", PAYLOAD).header("idempotency-key", key).build();
  }

  /** A new key on PostgreSQL: BEGIN, claim, business INSERT, COMMIT. */
  @Benchmark
  public ProcessingOutcome postgresNewKey() {
    return postgres.process(message("k-" + sequence.incrementAndGet()), NO_BROKER);
  }

  /**
   * A new key delivered as a possible redelivery ({@link InboundMessage#unaccountedRedelivery()}:
   * after a restart, a rebalance, {@code redelivered=true}): the attempt counted in a short
   * transaction of its own before the handler (docs/FAILURES.md, "Attempts that survive the
   * process"), then BEGIN, claim, business INSERT, COMMIT; the attempt row is removed with the
   * marker's commit.
   */
  @Benchmark
  public ProcessingOutcome postgresPossibleRedeliveryNewKey() {
    InboundMessage message = InboundMessage.builder("orders", PAYLOAD)
        .header("idempotency-key", "r-" + sequence.incrementAndGet())
        .unaccountedRedelivery(true)
        .build();
    return postgres.process(message, NO_BROKER);
  }

  /** A duplicate on PostgreSQL: BEGIN, claim (0 rows), fingerprint SELECT, COMMIT. */
  @Benchmark
  public ProcessingOutcome postgresDuplicate() {
    return postgres.process(duplicate, NO_BROKER);
  }

}
