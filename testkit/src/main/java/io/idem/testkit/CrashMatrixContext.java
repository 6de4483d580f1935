package io.idem.testkit;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.ProcessedEventStore;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;

/**
 * What the crash matrix's child JVM hands its {@link CrashMatrixConsumerFactory}: the point's
 * fresh destination and consumer group, the database the parent named, the parent's properties,
 * and the crash listener to put into the pipeline. Built by the child from its system properties;
 * one instance per child JVM. Thread-safe.
 */
public final class CrashMatrixContext {
  private final String point;
  private final String destination;
  private final String consumerGroup;
  private final String runId;
  private final int maxAttempts;
  private final Map<String, String> properties;
  private final CrashInjector crashInjector;
  private final IdempotencyListener crashListener;
  private final @Nullable PooledDataSource dataSource;
  private @Nullable SqlSessionFactory sessions;

  CrashMatrixContext(String point, String destination, String consumerGroup, String runId, int maxAttempts,
      Map<String, String> properties, CrashInjector crashInjector,
      CrashMatrix.@Nullable Jdbc jdbc) {
    this.point = point;
    this.destination = destination;
    this.consumerGroup = consumerGroup;
    this.runId = runId;
    this.maxAttempts = maxAttempts;
    this.properties = Map.copyOf(properties);
    this.crashInjector = crashInjector;
    this.crashListener = new Reporting(crashInjector);
    this.dataSource = jdbc == null ? null : pool(jdbc);
  }

  private static PooledDataSource pool(CrashMatrix.Jdbc jdbc) {
    Properties driver = new Properties();
    driver.setProperty("user", jdbc.user());
    if (!jdbc.password().isEmpty()) {
      driver.setProperty("password", jdbc.password());
    }
    if (!jdbc.schema().isEmpty()) {
      driver.setProperty("currentSchema", jdbc.schema()); // pgjdbc
    }
    String driverClass;
    try {
      driverClass = java.sql.DriverManager.getDriver(jdbc.url()).getClass().getName();
    } catch (java.sql.SQLException e) {
      throw new IllegalStateException("no JDBC driver on the classpath for " + jdbc.url(), e);
    }
    PooledDataSource pool = new PooledDataSource(driverClass, jdbc.url(), driver);
    pool.setPoolMaximumActiveConnections(8);
    return pool;
  }

  /**
   * The matrix point this child runs for, in every life of it (the crash life and the lives
   * after it): a {@link CrashPoint} name or {@value CrashMatrix#POISON}. A factory may configure
   * its consumer for a point — JMS uses a {@code CLIENT_ACKNOWLEDGE} session for {@link
   * CrashPoint#DEAD_LETTER_COPY_STORED}, the only session mode where that moment exists.
   */
  public String point() {
    return point;
  }

  /** The point's fresh topic or queue name, as the parent's {@link BrokerHarness} reported it. */
  public String destination() {
    return destination;
  }

  /** The point's fresh consumer group: use it for the pipeline (and the broker's group). */
  public String consumerGroup() {
    return consumerGroup;
  }

  /** The point's run id: the kit's effects rows carry it ({@link KitEffects}). */
  public String runId() {
    return runId;
  }

  /** The parent's {@link CrashMatrix.Builder#maxAttempts}; {@link #retryPolicy()} uses it. */
  public int maxAttempts() {
    return maxAttempts;
  }

  /**
   * The database the parent named ({@link CrashMatrix.Builder#jdbc}): a small MyBatis pool on its
   * URL, user and schema.
   *
   * @throws IllegalStateException when the parent named none
   */
  public DataSource dataSource() {
    if (dataSource == null) {
      throw new IllegalStateException("the crash matrix was built without jdbc(...)");
    }
    return dataSource;
  }

  /** MyBatis sessions on {@link #dataSource()} (JDBC transactions), for a MyBatis store. */
  public synchronized SqlSessionFactory sessions() {
    if (sessions == null) {
      Configuration configuration = new Configuration(
          new Environment("idem-crash-matrix", new JdbcTransactionFactory(), dataSource()));
      sessions = new SqlSessionFactoryBuilder().build(configuration);
    }
    return sessions;
  }

  /** Every property the parent passed ({@link CrashMatrix.Builder#properties}). */
  public Map<String, String> properties() {
    return properties;
  }

  /**
   * A property the parent passed.
   *
   * @throws IllegalArgumentException when it was not passed
   */
  public String property(String name) {
    String value = properties.get(name);
    if (value == null) {
      throw new IllegalArgumentException("crash matrix property '" + name + "' was not passed; passed: "
          + properties.keySet());
    }
    return value;
  }

  /**
   * The listener the pipeline must have: it halts the JVM at the point under test (a {@link
   * CrashInjector}) and prints each outcome and dead letter for the parent. Add it with {@code
   * IdempotentConsumer.Builder.listener}.
   */
  public IdempotencyListener crashListener() {
    return crashListener;
  }

  /**
   * The injector inside {@link #crashListener()}, for a factory that wraps its broker client and
   * calls {@link CrashInjector#atBrokerOperation} (needed for {@link
   * CrashPoint#DEAD_LETTER_COPY_STORED}; the parent then runs with {@link
   * CrashMatrix.Builder#interceptedBrokerCalls}).
   */
  public CrashInjector crashInjector() {
    return crashInjector;
  }

  /** maxAttempts {@link #maxAttempts()}, 100 ms fixed backoff, no jitter. */
  public RetryPolicy retryPolicy() {
    return RetryPolicy.builder()
        .maxAttempts(maxAttempts)
        .initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100))
        .multiplier(1.0)
        .jitter(0)
        .build();
  }

  /**
   * {@code handler}, except that a message with {@link CrashMatrix#DEAD_LETTER_HEADER} fails with
   * a {@link NonRetryableException} before it runs: the messages {@link
   * CrashPoint#DEAD_LETTER_COPY_STORED} needs dead-lettered. Wrap your own handler with it.
   */
  public <S> MessageHandler<S> deadLettering(MessageHandler<S> handler) {
    return (message, session) -> {
      if (message.header(CrashMatrix.DEAD_LETTER_HEADER) != null) {
        throw new NonRetryableException("the crash matrix dead-letters "
            + message.header(IdempotencyKeyExtractor.DEFAULT_HEADER));
      }
      handler.handle(message, session);
    };
  }

  /**
   * The adapter kit's pipeline on {@code store}: consumer group {@link #consumerGroup()}, a
   * handler writing one {@link KitEffects} row per call in the dedup transaction ({@link
   * #deadLettering}: failing the messages to dead-letter), {@link #retryPolicy()} and {@link
   * #crashListener()}.
   */
  public IdempotentConsumer<SqlSession> kitPipeline(ProcessedEventStore<SqlSession> store) {
    KitEffects effects = new KitEffects(dataSource(), runId);
    MessageHandler<SqlSession> handler = deadLettering((message, session) -> {
      String key = message.header(IdempotencyKeyExtractor.DEFAULT_HEADER);
      effects.record(session, key == null ? "(none)" : key, message.payload());
    });
    return IdempotentConsumer.builder(store)
        .consumerGroup(consumerGroup)
        .handler(handler)
        .retryPolicy(retryPolicy())
        .listener(crashListener)
        .build();
  }

  void close() {
    if (dataSource != null) {
      dataSource.forceCloseAll();
    }
  }

  /** The injector plus a line per outcome and dead letter on stdout, read by the parent. */
  private static final class Reporting implements IdempotencyListener {
    private final CrashInjector crashes;

    Reporting(CrashInjector crashes) {
      this.crashes = crashes;
    }

    @Override
    public void beforeClaim(InboundMessage message, IdempotencyKey key) {
      crashes.beforeClaim(message, key);
    }

    @Override
    public void afterHandler(InboundMessage message, IdempotencyKey key) {
      crashes.afterHandler(message, key);
    }

    @Override
    public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
      crashes.afterCommit(message, key, pending);
    }

    @Override
    public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
      CrashMatrixChild.print(CrashMatrixChild.DEAD_LETTER + " " + reason.key() + " " + reason.cause());
    }

    @Override
    public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome outcome, Duration elapsed) {
      CrashMatrixChild.print(CrashMatrixChild.OUTCOME + " " + (key == null ? "-" : key.value()) + " " + outcome);
    }
  }
}
