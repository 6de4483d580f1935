package io.idem.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;

/**
 * The crash tests' victim, run in a child JVM: a store, a pipeline with
 * {@link CrashInjector#fromSystemProperties()} as listener, and a {@link KafkaIdempotentConsumer}.
 * Runs until killed, or until the injector halts it ({@code idem.crash.point}).
 *
 * <p>System properties: {@code idem.test.bootstrap}, {@code idem.test.topic},
 * {@code idem.test.group}, {@code idem.test.jdbc-url}, {@code idem.test.jdbc-user},
 * {@code idem.test.jdbc-password}, {@code idem.test.schema}, optionally {@code idem.test.batch}
 * (the consumer's {@code maxBatchSize}, default 1), {@code idem.test.concurrency} (its
 * {@code concurrency}, default 1), {@code idem.test.commit-interval-ms} (default 0: after every
 * poll), {@code idem.test.max-poll-records} (default 50) and {@code idem.test.handler-sleep-ms}
 * (how long the handler sleeps before its write, default 0), {@code idem.test.poison-key} (the
 * handler prints {@code POISON-RUN attempt=<n>} and halts the JVM with status {@link
 * #POISON_STATUS} for a record of that key: a process-killing message) and {@code
 * idem.test.max-attempts} (the retry policy's maxAttempts, default 5).
 */
public final class KafkaCrashChild {
  /** The status a poison record's handler halts the JVM with. */
  static final int POISON_STATUS = 43;

  private KafkaCrashChild() {}

  public static void main(String[] args) throws Exception {
    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl(required("idem.test.jdbc-url"));
    pool.setUsername(required("idem.test.jdbc-user"));
    String password = System.getProperty("idem.test.jdbc-password", "");
    if (!password.isEmpty()) {
      pool.setPassword(password);
    }
    pool.setSchema(required("idem.test.schema"));
    pool.setMaximumPoolSize(4);
    HikariDataSource dataSource = new HikariDataSource(pool);
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(KafkaITSupport.sessions(dataSource)).build();
    CrashInjector crashes = CrashInjector.fromSystemProperties();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(required("idem.test.group"))
        .handler(poisoned(handler(Long.getLong("idem.test.handler-sleep-ms", 0)),
            System.getProperty("idem.test.poison-key")))
        .retryPolicy(RetryPolicy.builder().initialBackoff(Duration.ofMillis(100))
            .maxAttempts(Integer.getInteger("idem.test.max-attempts", 5)).build())
        .listener(crashes)
        .build();
    KafkaConsumerConfig config = KafkaConsumerConfig
        .builder(required("idem.test.bootstrap"), required("idem.test.topic"))
        .maxPollRecords(Integer.getInteger("idem.test.max-poll-records", 50))
        .maxBatchSize(Integer.getInteger("idem.test.batch", 1))
        .concurrency(Integer.getInteger("idem.test.concurrency", 1))
        // offsets committed after every poll (not the default 100 ms): DURING_ACK crashes in the
        // first commitSync, which must come while records are still left to process
        .commitInterval(Duration.ofMillis(Long.getLong("idem.test.commit-interval-ms", 0)))
        // the crashed member stays in the group until its session times out (default 45 s);
        // 6 s is the broker's default minimum
        .consumerProperty("session.timeout.ms", 6000)
        .consumerProperty("heartbeat.interval.ms", 500)
        .build();
    // DURING_ACK inside the offset commit: the broker committed the offsets, the JVM halts before
    // commitSync returns to the adapter (run with -Didem.crash.broker-calls=intercepted)
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline,
        properties -> new KafkaConsumer<byte[], byte[]>(properties) {
          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            super.commitSync(offsets);
            if (settles(offsets)) {
              crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commitSync");
            }
          }

          @Override
          public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            super.commitSync(offsets, timeout);
            if (settles(offsets)) {
              crashes.atBrokerOperation(CrashPoint.DURING_ACK, "commitSync");
            }
          }
        }, KafkaProducer::new);
    consumer.start();
    System.out.println("CHILD-STARTED");
    Thread.currentThread().join(); // until killed or halted
  }

  private static io.idem.MessageHandler<SqlSession> handler(long sleepMillis) {
    io.idem.MessageHandler<SqlSession> recording = KafkaITSupport.recording();
    return sleepMillis == 0 ? recording : (message, session) -> {
      Thread.sleep(sleepMillis);
      recording.handle(message, session);
    };
  }

  /** {@code handler}, except that a record of {@code poisonKey} (if any) halts the JVM in its handler. */
  private static io.idem.MessageHandler<SqlSession> poisoned(io.idem.MessageHandler<SqlSession> handler,
      String poisonKey) {
    return poisonKey == null ? handler : (message, session) -> {
      if (poisonKey.equals(KafkaITSupport.keyOf(message))) {
        System.out.println("POISON-RUN attempt=" + message.deliveryAttempt());
        System.out.flush();
        Runtime.getRuntime().halt(POISON_STATUS);
      }
      handler.handle(message, session);
    };
  }

  /**
   * Whether a commit moves offsets for settled records, not the adapter's mark at assignment
   * ({@link ConsumerLoop#OWNED}, made before any record ran), which DURING_ACK must not hit.
   */
  private static boolean settles(Map<TopicPartition, OffsetAndMetadata> offsets) {
    return offsets.values().stream().anyMatch(offset -> !ConsumerLoop.OWNED.equals(offset.metadata()));
  }

  private static String required(String name) {
    String value = System.getProperty(name);
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("system property " + name + " must be set");
    }
    return value;
  }
}
