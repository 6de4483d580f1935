package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.BrokerConsumer;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.demo.Outbound;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.ProcessedEventsSchema;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Eight consumer instances (each with its own pool, store and pipeline, as eight application
 * instances would have) compete for the same keys on one destination, in one consumer group:
 * every key is published {@value #COPIES} times, spread so that the copies reach different
 * instances at about the same time, and the handler holds its transaction open a few
 * milliseconds so that racing claims really wait on each other's uncommitted marker.
 *
 * <p>Proves on the database itself: each effect exactly once; PostgreSQL detected no deadlock
 * ({@code pg_stat_database.deadlocks} of a database of the test's own); no session was ever seen
 * {@code idle in transaction (aborted)} and none is left {@code idle in transaction}; and no
 * transaction had to be retried for a store failure (SQLSTATE {@code 40P01} deadlock or
 * {@code 40001} serialization failure among them). The instances run in this JVM: the claim's
 * behaviour does not depend on where its caller lives, and eight child JVMs would cost far more.
 *
 * <p>Each broker runs per-message and in batch mode ({@value #BATCH} messages per transaction).
 *
 * <p>CI scale: 150 keys × 4 copies per broker and mode; full scale: 1,500 keys × 4 copies.
 */
class ConcurrentConsumersIT {
  private static final int INSTANCES = 8;
  private static final int COPIES = 4;
  private static final int KEYS = Scale.events(150, 1_500);
  private static final long HOLD_MILLIS = 3;
  /** Most messages per transaction in the batch-mode cases. */
  private static final int BATCH = 10;
  private static final String STATE_ABORTED = "idle in transaction (aborted)";

  private static ScratchDatabase database;

  @BeforeAll
  static void createDatabase() {
    database = ScratchDatabase.create("idem_it_concurrency");
  }

  @AfterAll
  static void dropDatabase() {
    if (database != null) {
      database.close();
    }
  }

  @ParameterizedTest(name = "{0}: 8 instances on the same keys")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  @Timeout(value = 4, unit = TimeUnit.MINUTES)
  void eightInstancesApplyEachKeyOnceWithoutDeadlocksOrAbortedTransactions(String brokerName) throws Exception {
    competeOnTheSameKeys(brokerName, 1);
  }

  /**
   * Batch mode: each instance claims up to {@value #BATCH} keys in one multi-row claim, so racing
   * batches wait on each other's uncommitted markers, several at a time.
   */
  @ParameterizedTest(name = "{0}, batch mode: 8 instances on the same keys")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  @Timeout(value = 4, unit = TimeUnit.MINUTES)
  void inBatchModeEightInstancesApplyEachKeyOnceWithoutDeadlocksOrAbortedTransactions(String brokerName)
      throws Exception {
    competeOnTheSameKeys(brokerName, BATCH);
  }

  private static void competeOnTheSameKeys(String brokerName, int maxBatchSize) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String schema = "conc_" + brokerName + "_" + run;
    String group = "idem-it-conc-" + run;
    database.createSchema(schema);
    try (HikariDataSource admin = database.pool(schema, 2, "idem-it-conc-admin-" + run)) {
      try (Connection c = admin.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE effects (id bigserial PRIMARY KEY, idempotency_key text NOT NULL,"
            + " instance int NOT NULL)");
      }
      ProcessedEventsSchema.apply(admin, "idem_processed_events");
      long deadlocksBefore = database.deadlocks();

      List<Instance> instances = new ArrayList<>();
      long maxAborted = 0;
      try (Competitors destination = Competitors.on(brokerName)) {
        try {
          for (int i = 0; i < INSTANCES; i++) {
            instances.add(new Instance(i, schema, group, destination, maxBatchSize));
          }
          destination.awaitConsumers(group, INSTANCES);
          destination.publish(messages(run));
          long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
          // poll by hand: every poll also looks for sessions left in an aborted transaction
          while (!(count(admin, "SELECT count(DISTINCT idempotency_key) FROM effects") >= KEYS
              && settled(instances) >= (long) KEYS * COPIES)) {
            maxAborted = Math.max(maxAborted, database.sessions(STATE_ABORTED));
            if (System.nanoTime() > deadline) {
              fail("not all %d keys applied and %d deliveries settled within 3 minutes (applied: %d, settled: %d)",
                  KEYS, KEYS * COPIES, count(admin, "SELECT count(DISTINCT idempotency_key) FROM effects"),
                  settled(instances));
            }
            Thread.sleep(100);
          }
          maxAborted = Math.max(maxAborted, database.sessions(STATE_ABORTED));
          await("no session left idle in transaction").atMost(Duration.ofSeconds(10))
              .until(() -> database.sessions("idle in transaction") + database.sessions(STATE_ABORTED) == 0);
        } finally {
          instances.forEach(Instance::close);
        }
        // the backends flush their statistics (deadlocks among them) as they exit
        await("the instances' sessions ended").atMost(Duration.ofSeconds(30))
            .until(() -> database.connections("idem-it-conc-" + group + "-") == 0);

        long processed = instances.stream().mapToLong(i -> i.outcomes.count(ProcessingOutcome.PROCESSED)).sum();
        long duplicates = instances.stream().mapToLong(i -> i.outcomes.count(ProcessingOutcome.DUPLICATE)).sum();
        long busyInstances = instances.stream().filter(i -> i.outcomes.count(ProcessingOutcome.PROCESSED) > 0).count();
        List<String> retries = new ArrayList<>();
        instances.forEach(i -> retries.addAll(i.retries));
        Map<Integer, Long> perInstance = new TreeMap<>();
        instances.forEach(i -> perInstance.put(i.number, i.outcomes.count(ProcessingOutcome.PROCESSED)));
        System.out.printf("[%s, batch %d] %d keys × %d copies on %d instances: %d processed %s, %d duplicates skipped,"
                + " %d retries, deadlocks %d -> %d%n", brokerName, maxBatchSize, KEYS, COPIES, INSTANCES, processed,
            perInstance, duplicates, retries.size(), deadlocksBefore, database.deadlocks());

        assertThat(count(admin, "SELECT count(*) FROM effects")).as("effect rows").isEqualTo(KEYS);
        assertThat(count(admin, "SELECT count(*) FROM (SELECT idempotency_key FROM effects"
            + " GROUP BY idempotency_key HAVING count(*) > 1) d")).as("keys applied more than once").isZero();
        assertThat(count(admin, "SELECT count(*) FROM idem_processed_events")).as("markers").isEqualTo(KEYS);
        assertThat(processed).as("deliveries settled as PROCESSED").isEqualTo(KEYS);
        assertThat(duplicates).as("deliveries settled as DUPLICATE").isGreaterThanOrEqualTo((long) KEYS * (COPIES - 1));
        assertThat(busyInstances).as("instances that applied keys (they must really compete)").isGreaterThanOrEqualTo(2);
        assertThat(retries).as("transactions retried (a StoreUnavailableException with SQLSTATE 40P01 is a"
            + " deadlock, 40001 a serialization failure)").isEmpty();
        assertThat(maxAborted).as("sessions seen idle in an aborted transaction").isZero();
        assertThat(database.deadlocks() - deadlocksBefore).as("deadlocks PostgreSQL detected").isZero();
        assertThat(destination.readDeadLetters()).as("dead letters").isEmpty();
      }
    }
  }

  /** Each key {@value #COPIES} times, two keys interleaved: k0 k1 k0 k1 … so copies spread out. */
  private static List<Outbound> messages(String run) {
    List<Outbound> out = new ArrayList<>();
    for (int k = 0; k < KEYS; k += 2) {
      for (int copy = 0; copy < COPIES; copy++) {
        for (int j = k; j < Math.min(KEYS, k + 2); j++) {
          String key = run + "-key-" + j;
          out.add(Outbound.keyed(key, key.getBytes(StandardCharsets.UTF_8)));
        }
      }
    }
    return out;
  }

  private static long settled(List<Instance> instances) {
    return instances.stream().mapToLong(i -> i.outcomes.count(ProcessingOutcome.PROCESSED)
        + i.outcomes.count(ProcessingOutcome.DUPLICATE)).sum();
  }

  private static long count(HikariDataSource pool, String sql) throws SQLException {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** One application instance: its own pool, MyBatis setup, store, pipeline and adapter consumer. */
  private static final class Instance implements AutoCloseable {
    final int number;
    final OutcomeRecorder outcomes = new OutcomeRecorder();
    final List<String> retries = new CopyOnWriteArrayList<>();
    private final HikariDataSource pool;
    private final BrokerConsumer consumer;

    Instance(int number, String schema, String group, Competitors destination, int maxBatchSize) {
      this.number = number;
      this.pool = database.pool(schema, 4, "idem-it-conc-" + group + "-" + number);
      Configuration configuration =
          new Configuration(new Environment("it", new JdbcTransactionFactory(), pool));
      MyBatisProcessedEventStore store =
          MyBatisProcessedEventStore.builder(new SqlSessionFactoryBuilder().build(configuration)).build();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
          .consumerGroup(group)
          .handler((message, session) -> {
            try (PreparedStatement ps = session.getConnection().prepareStatement(
                "INSERT INTO effects (idempotency_key, instance) VALUES (?, ?)")) {
              ps.setString(1, new String(message.payload(), StandardCharsets.UTF_8));
              ps.setInt(2, number);
              ps.executeUpdate();
            }
            Thread.sleep(HOLD_MILLIS); // keep the marker uncommitted a moment: racing claims wait on it
          })
          .retryPolicy(RetryPolicy.builder().initialBackoff(Duration.ofMillis(50))
              .maxBackoff(Duration.ofMillis(500)).maxAttempts(10).build())
          .listener(outcomes)
          .listener(new IdempotencyListener() {
            @Override
            public void onRetry(InboundMessage message, @Nullable IdempotencyKey key, Throwable failure,
                Duration delay) {
              retries.add((failure instanceof StoreUnavailableException ? "store unavailable" : "handler failed")
                  + " (SQLSTATE " + sqlState(failure) + "): " + failure);
            }
          })
          .build();
      this.consumer = destination.consumer(pipeline, maxBatchSize);
      consumer.start();
    }

    private static @Nullable String sqlState(Throwable failure) {
      for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
        if (t instanceof SQLException sql && sql.getSQLState() != null) {
          return sql.getSQLState();
        }
      }
      return null;
    }

    @Override
    public void close() {
      try {
        consumer.close();
      } finally {
        pool.close();
      }
    }
  }
}
