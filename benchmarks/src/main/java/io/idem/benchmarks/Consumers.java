package io.idem.benchmarks;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.jspecify.annotations.Nullable;

/** Starts the consumer of a {@link Variant} on a run's topic and tables. */
final class Consumers {
  /** Kafka's {@code session.timeout.ms} in crash runs: a killed member leaves the group quickly. */
  static final int CRASH_SESSION_TIMEOUT_MS = 6000;

  private Consumers() {}

  /** What the consumer of a run is given. */
  record Setup(String bootstrap, String topic, String group, int maxBatchSize, int concurrency, boolean crashRun,
      long commitIntervalMillis, int maxPollRecords) {
    /** The adapter's default commit interval and each consumer's own {@code max.poll.records}. */
    Setup(String bootstrap, String topic, String group, int maxBatchSize, int concurrency, boolean crashRun) {
      this(bootstrap, topic, group, maxBatchSize, concurrency, crashRun, -1, 0);
    }
  }

  /**
   * Starts the consumer; it reports to {@code progress}. Close the result to stop it.

   */
  static AutoCloseable start(Variant variant, Setup setup, BenchDatabase db, Progress progress) {
    if (!variant.idem) {
      RawConsumer raw = new RawConsumer(setup, db, variant == Variant.RAW_BATCHED, progress);
      raw.start();
      return raw;
    }
    KafkaConsumerConfig.Builder config = KafkaConsumerConfig.builder(setup.bootstrap(), setup.topic());
    if (variant.batch()) {
      config.maxBatchSize(setup.maxBatchSize());
    } else if (variant == Variant.IDEM_PER_MESSAGE) {
      config.maxBatchSize(1);
    }
    if (setup.concurrency() > 1) {
      config.concurrency(setup.concurrency());
    }
    if (setup.maxPollRecords() > 0) {
      config.maxPollRecords(setup.maxPollRecords());
    }
    if (setup.commitIntervalMillis() >= 0) {
      config.commitInterval(Duration.ofMillis(setup.commitIntervalMillis()));
    }
    if (setup.crashRun()) {
      config.consumerProperty("session.timeout.ms", CRASH_SESSION_TIMEOUT_MS);
    }
    KafkaIdempotentConsumer consumer =
        KafkaIdempotentConsumer.create(config.build(), pipeline(variant, db, setup.group(), progress));
    consumer.start();
    return consumer;
  }

  /** The README quick start's pipeline, plus a listener that times it. */
  static IdempotentConsumer<SqlSession> pipeline(Variant variant, BenchDatabase db, String group, Progress progress) {
    Configuration configuration =
        new Configuration(new Environment("bench", BenchDatabase.transactionFactory(), db.dataSource));
    configuration.addMapper(EffectsMapper.class);
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(configuration);
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    IdempotentConsumer.Builder<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup(group);
    if (variant == Variant.IDEM_BATCH_HANDLER) {
      pipeline.batchHandler((messages, session) -> applyAll(messages, session, db.mariaDb));
    } else {
      pipeline.handler((key, message, session) -> session.getMapper(EffectsMapper.class).apply(key.value()));
    }
    return pipeline.listener(new Timing(progress)).build();
  }

  // The batch handler's one round trip for all new messages of the batch.
  private static void applyAll(List<KeyedMessage> messages, SqlSession session, boolean mariaDb) throws Exception {
    Connection c = session.getConnection();
    List<String> ids = messages.stream().map(m -> m.key().value()).toList();
    try (PreparedStatement ps = c.prepareStatement(BenchDatabase.insertAll(BenchDatabase.EFFECTS, mariaDb ? ids.size() : -1))) {
      BenchDatabase.bindAll(c, ps, ids, mariaDb);
      ps.executeUpdate();
    }
  }

  /** First record seen ({@code onKey}) to each settled outcome (a retry is not settled). */
  private static final class Timing implements IdempotencyListener {
    private final Progress progress;

    Timing(Progress progress) {
      this.progress = progress;
    }

    @Override
    public void onKey(InboundMessage message, IdempotencyKey key) {
      progress.begin();
    }

    @Override
    public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key, ProcessingOutcome outcome,
        Duration elapsed) {
      if (outcome != ProcessingOutcome.RETRY && outcome != ProcessingOutcome.RETRY_STORE_UNAVAILABLE
          && outcome != ProcessingOutcome.RETRY_TRANSACTION && outcome != ProcessingOutcome.RELEASED) {
        progress.settled(1, elapsed.toNanos());
      }
    }
  }
}
