package io.idem.store.jdbc;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ibatis.builder.xml.XMLMapperBuilder;
import org.apache.ibatis.executor.BatchExecutor;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The processed-events store on MyBatis and PostgreSQL. Each
 * {@link #inTransaction(TransactionWork)} opens one {@link SqlSession} of the application's
 * {@link SqlSessionFactory} (auto-commit off), hands it to the work — the pipeline's claim and the
 * {@link io.idem.MessageHandler}, whose mapper calls therefore join the same transaction — and
 * commits or rolls back.
 *
 * <p>The claim is one {@code INSERT … ON CONFLICT DO NOTHING}; the database's row count decides
 * "new" (1) or "exists" (0). A unique violation is never caught inside the transaction (PostgreSQL
 * would abort it), and sessions on MyBatis' {@code BATCH} executor are refused because their row
 * counts are placeholders. At READ COMMITTED (the default) a claim racing an open transaction on
 * the same key waits for it and then sees its outcome; under REPEATABLE READ or SERIALIZABLE the
 * race surfaces as SQLSTATE 40001 instead, reported as {@link StoreUnavailableException} so the
 * pipeline retries the whole transaction.
 *
 * <p>Idem must own each transaction, or a message could be acknowledged with its effect lost.
 * {@link Builder#build()} therefore refuses, without reaching the database, a session factory
 * without an {@code Environment} or whose {@code Environment} uses MyBatis' {@code
 * ManagedTransactionFactory} (its commit and rollback do nothing) — build it with MyBatis' {@code
 * JdbcTransactionFactory}. Then, unless {@link Builder#verifyTable(boolean) verifyTable(false)}, it
 * checks in a session opened the way every transaction is: that the connection is not in
 * auto-commit mode (where the claim would commit on its own, before the handler ran, and a failed
 * message would come back as a duplicate) and that commit really ends the transaction; the table's
 * shape (every column of {@link #MIGRATION_RESOURCE} and a primary key or unique constraint on
 * exactly {@code (consumer_group, idempotency_key)}); and that the table takes a claim — the
 * store's own claim of the longest consumer group and key, then the same claim again, which must
 * be a duplicate, all rolled back — so that a column too short or of another type, a NOT NULL
 * column without a default, a missing privilege or a failing trigger is refused at start-up instead
 * of failing every message as an "outage".
 * Every transaction checks auto-commit again before the claim and, if it is on, fails the message
 * without claiming: a {@link StoreUnavailableException} (rolled back, retried with backoff, never
 * acked) logged at ERROR.
 *
 * <p>Thread-safe; one instance serves every worker. Build with {@link #builder(SqlSessionFactory)}.
 */
public final class MyBatisProcessedEventStore implements ProcessedEventStore<SqlSession> {
  private static final Logger LOG = LoggerFactory.getLogger(MyBatisProcessedEventStore.class);

  /** Default {@link Builder#tableName(String) table}: {@value}. */
  public static final String DEFAULT_TABLE = "idem_processed_events";

  /** Classpath location of the schema script: {@value}. */
  public static final String MIGRATION_RESOURCE = "db/migration/idem/V1__processed_events.sql";

  private static final String MAPPER_TEMPLATE = "io/idem/store/jdbc/ProcessedEventMapper.xml";

  private final SqlSessionFactory sessions;
  private final TableName table;
  private final ExecutorType executorType;
  private final @Nullable TransactionIsolationLevel isolation;
  private final String namespace;
  private final String claimStatement;
  private final String fingerprintStatement;
  private final String existsStatement;
  private final String purgeStatement;
  private final AtomicLong autoCommitRefusals = new AtomicLong();

  private MyBatisProcessedEventStore(Builder b) {
    this.sessions = b.sessions;
    this.table = TableName.of(b.tableName);
    this.executorType = b.executorType;
    this.isolation = b.isolation;
    this.namespace = registerMapper(sessions.getConfiguration(), table);
    this.claimStatement = namespace + ".claim";
    this.fingerprintStatement = namespace + ".fingerprint";
    this.existsStatement = namespace + ".exists";
    this.purgeStatement = namespace + ".purge";
  }

  /** Starts building a store on the application's session factory. */
  public static Builder builder(SqlSessionFactory sessions) {
    return new Builder(sessions);
  }

  /** The table, lower-cased as PostgreSQL stores it. */
  public String tableName() {
    return table.qualified();
  }

  @Override
  public <T> T inTransaction(TransactionWork<SqlSession, T> work) throws Exception {
    SqlSession session;
    try {
      session = openSession();
    } catch (RuntimeException e) {
      throw new StoreUnavailableException(
          "could not open a database session: " + TransientFailures.rootMessage(e), e);
    }
    try {
      requireTransaction(session);
      T result;
      try {
        result = work.run(GuardedSession.wrap(session));
      } catch (Throwable failure) {
        rollback(session, failure);
        if (failure instanceof StoreUnavailableException || !TransientFailures.isTransient(failure)) {
          throw failure;
        }
        throw new StoreUnavailableException(
            "database failure, transaction rolled back: " + TransientFailures.rootMessage(failure), failure);
      }
      try {
        // force: the handler may have written through session.getConnection(), which MyBatis
        // does not see as dirty; without force the commit would be skipped.
        session.commit(true);
      } catch (RuntimeException e) {
        rollback(session, e);
        throw new StoreUnavailableException(
            "commit failed (the transaction may or may not have committed; a redelivery will find"
                + " out): " + TransientFailures.rootMessage(e), e);
      }
      return result;
    } finally {
      try {
        session.close();
      } catch (RuntimeException e) {
        LOG.debug("closing the session failed; the pool discards the connection", e);
      }
    }
  }

  /** A session the way every transaction of the store opens it (and {@link Builder#build()} checks it). */
  private SqlSession openSession() {
    return isolation == null
        ? sessions.openSession(executorType, false)
        : sessions.openSession(executorType, isolation);
  }

  /**
   * Refuses the transaction before anything is claimed when its connection is in auto-commit mode
   * (the claim would commit on its own). A {@link StoreUnavailableException}, so the pipeline rolls
   * back and retries with backoff — never acks, never dead-letters a good message — and logged at
   * ERROR (once per doubling of the count) because only a configuration change ends it.
   */
  private void requireTransaction(SqlSession session) {
    boolean autoCommit;
    try {
      autoCommit = session.getConnection().getAutoCommit();
    } catch (SQLException | RuntimeException e) {
      throw new StoreUnavailableException(
          "could not open a database connection: " + TransientFailures.rootMessage(e), e);
    }
    if (autoCommit) {
      long refusals = autoCommitRefusals.incrementAndGet();
      if (Long.bitCount(refusals) == 1) {
        LOG.error("{} transaction(s) refused, nothing claimed: {}", refusals,
            StartupChecks.AUTO_COMMIT_REFUSED);
      }
      throw new StoreUnavailableException(
          "transaction refused, nothing claimed: " + StartupChecks.AUTO_COMMIT_REFUSED, null);
    }
  }

  private static void rollback(SqlSession session, Throwable cause) {
    try {
      session.rollback(true);
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  @Override
  public ClaimResult claim(SqlSession transaction, IdempotencyKey key, byte[] payloadFingerprint) {
    Objects.requireNonNull(transaction, "transaction");
    Objects.requireNonNull(key, "key");
    if (payloadFingerprint.length != 32) {
      throw new IllegalArgumentException(
          "payloadFingerprint must be a 32-byte SHA-256, but had " + payloadFingerprint.length + " bytes");
    }
    return claim(transaction, key.consumerGroup(), key.value(), key.source().name(), payloadFingerprint);
  }

  /**
   * The claim itself, on values {@link IdempotencyKey} has validated — or on the values no real key
   * can have that {@link ClaimProbe} claims at build.
   */
  ClaimResult claim(
      SqlSession transaction, String consumerGroup, String key, String keySource, byte[] fingerprint) {
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", consumerGroup);
    params.put("key", key);
    params.put("keySource", keySource);
    params.put("fingerprint", fingerprint);
    int inserted = transaction.insert(claimStatement, params);
    if (inserted == BatchExecutor.BATCH_UPDATE_RETURN_VALUE) {
      throw new IllegalStateException(
          "the claim ran on a session with MyBatis' BATCH executor, whose row counts are"
              + " placeholders, so a duplicate cannot be told from a new key; open the session with"
              + " ExecutorType.SIMPLE or REUSE");
    }
    if (inserted == 1) {
      return ClaimResult.CLAIMED;
    }
    byte[] stored = transaction.selectOne(fingerprintStatement, params);
    if (stored == null) {
      // Purged between the two statements; the conflicting row is gone, so there is nothing to
      // compare with. Report a duplicate rather than apply twice within the retention window.
      return ClaimResult.DUPLICATE;
    }
    return Arrays.equals(stored, fingerprint) ? ClaimResult.DUPLICATE : ClaimResult.CONFLICT;
  }

  /**
   * Re-reads the marker inside the transaction. On PostgreSQL a statement in an aborted
   * transaction fails (SQLSTATE 25P02: the handler swallowed an error, and the commit would
   * silently roll back), and a marker that is gone means the transaction was ended under the store.
   *
   * @throws IllegalStateException when the marker is not visible to the transaction any more
   */
  @Override
  public void confirmClaim(SqlSession transaction, IdempotencyKey key) {
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", key.consumerGroup());
    params.put("key", key.value());
    Boolean held = transaction.selectOne(existsStatement, params);
    if (!Boolean.TRUE.equals(held)) {
      throw new IllegalStateException("the claim of key '" + key.value() + "' is no longer held by"
          + " its transaction (was the transaction ended by the handler?); nothing is applied");
    }
  }

  /**
   * Runs {@link StartupChecks}, then {@link ClaimProbe}, in a session opened like every
   * transaction of the store.
   *
   * @throws IllegalStateException on a misconfiguration (session, table)
   * @throws IllegalArgumentException when the table name cannot be used unquoted (a reserved word)
   * @throws StoreUnavailableException when the database cannot be reached
   */
  private void checkAtStartup() {
    SqlSession session;
    try {
      session = openSession();
    } catch (RuntimeException e) {
      throw StartupChecks.failure("could not open a database session", e);
    }
    try {
      StartupChecks.run(session, namespace, table);
      ClaimProbe.run(session, this, namespace, table);
    } finally {
      try {
        session.rollback(true);
      } catch (RuntimeException e) {
        LOG.debug("rolling back the start-up check session failed", e);
      }
      session.close();
    }
  }

  @Override
  public int purge(Instant processedBefore, int maxRows) {
    if (maxRows < 1) {
      throw new IllegalArgumentException("maxRows must be >= 1, but was " + maxRows);
    }
    Map<String, Object> params = new HashMap<>();
    params.put("before", Timestamp.from(processedBefore));
    params.put("maxRows", maxRows);
    try {
      return inTransaction(session -> session.delete(purgeStatement, params));
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new StoreUnavailableException("purge failed: " + e.getMessage(), e);
    }
  }

  @Override
  public boolean isProcessed(IdempotencyKey key) {
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", key.consumerGroup());
    params.put("key", key.value());
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, true)) {
      Boolean exists = session.selectOne(existsStatement, params);
      return Boolean.TRUE.equals(exists);
    } catch (RuntimeException e) {
      if (TransientFailures.isTransient(e)) {
        throw new StoreUnavailableException("lookup failed: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  @Override
  public String toString() {
    return "MyBatisProcessedEventStore[table=" + table.qualified() + ", executor=" + executorType
        + ", isolation=" + (isolation == null ? "driver default" : isolation) + "]";
  }

  // One namespace per table, registered once per Configuration.
  private static String registerMapper(Configuration configuration, TableName table) {
    String namespace = "io.idem.store.jdbc.ProcessedEvents." + table.qualified();
    synchronized (configuration) {
      if (configuration.hasStatement(namespace + ".claim", false)) {
        return namespace;
      }
      String xml = readResource(MAPPER_TEMPLATE)
          .replace("__NAMESPACE__", namespace)
          .replace("__TABLE__", table.qualified());
      InputStream in = new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8));
      new XMLMapperBuilder(in, configuration, MAPPER_TEMPLATE + "#" + table.qualified(),
              configuration.getSqlFragments())
          .parse();
    }
    return namespace;
  }

  static String readResource(String name) {
    try (InputStream in = MyBatisProcessedEventStore.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource " + name + " is missing from idem-store-jdbc");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("could not read " + name, e);
    }
  }

  /** Builder of {@link MyBatisProcessedEventStore}; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final SqlSessionFactory sessions;
    private String tableName = DEFAULT_TABLE;
    private ExecutorType executorType = ExecutorType.SIMPLE;
    private @Nullable TransactionIsolationLevel isolation = TransactionIsolationLevel.READ_COMMITTED;
    private boolean createTableIfMissing;
    private boolean verifyTable = true;

    private Builder(SqlSessionFactory sessions) {
      this.sessions = Objects.requireNonNull(sessions, "sessions");
    }

    /** Default {@value MyBatisProcessedEventStore#DEFAULT_TABLE}; {@code table} or {@code schema.table}. */
    public Builder tableName(String value) {
      this.tableName = Objects.requireNonNull(value, "tableName");
      return this;
    }

    /**
     * Default {@link ExecutorType#SIMPLE}; {@link ExecutorType#REUSE} is allowed, {@link
     * ExecutorType#BATCH} is refused (its row counts are placeholders).
     */
    public Builder executorType(ExecutorType value) {
      this.executorType = Objects.requireNonNull(value, "executorType");
      return this;
    }

    /**
     * Default {@link TransactionIsolationLevel#READ_COMMITTED} (PostgreSQL's default, under which a
     * racing claim waits and then sees the duplicate). {@code null} keeps the connection's level.
     */
    public Builder isolation(@Nullable TransactionIsolationLevel value) {
      this.isolation = value;
      return this;
    }

    /**
     * Default {@code false}. {@code true} runs {@link #MIGRATION_RESOURCE} (idempotent, under an
     * advisory lock) when {@link #build()} is called: handy for demos and tests; production
     * schemas usually belong to the application's migration tool.
     */
    public Builder createTableIfMissing(boolean value) {
      this.createTableIfMissing = value;
      return this;
    }

    /**
     * Default {@code true}: {@link #build()} opens one session the way the store's transactions
     * are opened and checks that it is not in auto-commit mode, that its commit ends the
     * transaction, that the table exists with every column of {@link #MIGRATION_RESOURCE} and a
     * primary key or unique constraint on exactly {@code (consumer_group, idempotency_key)}, and
     * that it takes a claim of the longest consumer group and key and sees it again as a
     * duplicate (rolled back, nothing left behind); so a misconfiguration fails at start-up instead of losing effects or making every
     * message retry as if the database were down. {@code false} skips these database checks (for
     * example when the database may not be up yet when the application starts). What needs no
     * database is checked either way: the executor type, the table name, and the factory's {@code
     * Environment} (present, and not MyBatis' {@code ManagedTransactionFactory}); and every
     * transaction still checks auto-commit before its claim.
     */
    public Builder verifyTable(boolean value) {
      this.verifyTable = value;
      return this;
    }

    /**
     * Validates, creates the table when asked, and runs the {@link #verifyTable(boolean) checks}.
     *
     * @throws IllegalArgumentException when the table name is not a plain identifier (or is a
     *     reserved word) or the executor type is BATCH
     * @throws IllegalStateException when the factory has no Environment or uses MyBatis'
     *     ManagedTransactionFactory (whatever {@code verifyTable} says), when the sessions are in
     *     auto-commit mode or their commit does not commit, when the table is missing, lacks a
     *     column or the (consumer_group, idempotency_key) key, cannot be read, or refuses or
     *     discards the probe claim (the database's message quoted), or when {@code
     *     createTableIfMissing} failed for a reason other than an outage (a missing schema, a
     *     privilege, …); the message says which
     * @throws StoreUnavailableException when the database could not be reached
     */
    public MyBatisProcessedEventStore build() {
      if (executorType == ExecutorType.BATCH) {
        throw new IllegalArgumentException(
            "executorType must be SIMPLE or REUSE, but was BATCH: BATCH row counts are placeholders,"
                + " so a duplicate claim could not be detected");
      }
      TableName table = TableName.of(tableName);
      StartupChecks.requireTransactionFactory(sessions.getConfiguration());
      if (createTableIfMissing) {
        ProcessedEventsSchema.apply(sessions, table);
      }
      MyBatisProcessedEventStore store = new MyBatisProcessedEventStore(this);
      if (verifyTable) {
        store.checkAtStartup();
      }
      return store;
    }
  }
}
