package io.idem.store.jdbc;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.NextClaim;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionRun;
import io.idem.spi.TransactionWork;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.ibatis.exceptions.PersistenceException;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The processed-events store on MyBatis and PostgreSQL or MariaDB ({@link Dialect}, read from the
 * JDBC metadata at {@link Builder#build()}; what differs on MariaDB — the claim, the lock wait, the
 * retried errors, the check after the handler — is tabled in docs/STORE.md, "Databases"; the rest
 * of this page describes PostgreSQL). Each
 * {@link #inTransaction(TransactionWork)} opens one {@link SqlSession} of the application's
 * {@link SqlSessionFactory} (auto-commit off), hands it to the work — the pipeline's claim and the
 * {@link io.idem.MessageHandler}, whose mapper calls therefore join the same transaction — and
 * commits or rolls back. The reference (factory, schema, start-up checks, the handler's session,
 * retention) is docs/STORE.md; the design behind it, docs/DESIGN.md ("Store rules").
 *
 * <h2>Round trips</h2>
 *
 * A new message costs: the claim (one statement, which also sets the claim's lock timeout), the
 * handler's own statements, and one round trip that checks the claiming transaction is still the
 * one running and COMMITs. A duplicate costs the claim and the COMMIT. No isolation statement is
 * sent per transaction unless {@link Builder#isolation} asks for one.
 *
 * <h2>The claim</h2>
 *
 * One statement, {@code INSERT … ON CONFLICT DO NOTHING}, that returns either the claiming
 * transaction or the stored fingerprint; a racing conflict is never called a duplicate. A claim
 * racing an open transaction on the same key waits for it at most {@link
 * Builder#claimLockTimeout} (SQLSTATE 55P03 on the claim); that, and SQLSTATE 40001 under
 * REPEATABLE READ or SERIALIZABLE, are a {@link TransactionRetryException}.
 *
 * <h2>Who failed</h2>
 *
 * {@link #inTransaction} classifies each failure once, from the store's own connection, never from
 * a cause chain holding a socket exception (the rules, with examples of each row, and where each
 * is tested: docs/FAILURES.md):
 *
 * <table>
 *   <caption>Failure classification</caption>
 *   <tr><th>what happened</th><th>thrown</th></tr>
 *   <tr><td>no session or connection could be opened (refused, pool timed out)</td>
 *       <td>{@link StoreUnavailableException}</td></tr>
 *   <tr><td>SQLSTATE 40001 or 40P01 from the claim, the handler's statements or the COMMIT; the
 *       claim waited longer than {@link Builder#claimLockTimeout} (55P03 on the claim)</td>
 *       <td>{@link TransactionRetryException}</td></tr>
 *   <tr><td>anything else, while the transaction's connection is still valid
 *       ({@link Connection#isValid}), or after it broke but a fresh connection works (the server
 *       ended the handler's session)</td><td>the work's own exception, unchanged: a handler
 *       failure</td></tr>
 *   <tr><td>the transaction's connection broke and a fresh one fails too</td>
 *       <td>{@link StoreUnavailableException}</td></tr>
 *   <tr><td>the handler ended the transaction (swallowed SQL error, SQL-text COMMIT, END,
 *       ROLLBACK)</td><td>{@link IllegalStateException}: a handler failure</td></tr>
 * </table>
 *
 * <h2>Configuration checks</h2>
 *
 * Idem must own each transaction, or a message could be acknowledged with its effect lost.
 * {@link Builder#build()} therefore refuses, without reaching the database, a session factory
 * without an {@code Environment} or whose {@code Environment} uses MyBatis' {@code
 * ManagedTransactionFactory} (its commit and rollback do nothing) — build it with MyBatis' {@code
 * JdbcTransactionFactory}. Then, unless {@link Builder#verifyTable(boolean) verifyTable(false)}, it
 * checks the sessions, the table's shape and a probe claim against the database ({@link
 * Builder#verifyTable(boolean)}; what each check refuses: docs/STORE.md), and logs the sessions'
 * isolation level once (INFO). Every transaction checks auto-commit again before the claim (no
 * round trip) and, if it is on, fails the message without claiming: a {@link
 * StoreUnavailableException} (rolled back, retried with backoff, never acked) logged at ERROR.
 *
 * <p>Thread-safe; one instance serves every worker. Build with {@link #builder(SqlSessionFactory)}.
 */
public final class MyBatisProcessedEventStore implements ProcessedEventStore<SqlSession> {
  private static final Logger LOG = LoggerFactory.getLogger(MyBatisProcessedEventStore.class);

  /** Default {@link Builder#tableName(String) table}: {@value}. */
  public static final String DEFAULT_TABLE = "idem_processed_events";

  /** Classpath location of the schema script: {@value}. */
  public static final String MIGRATION_RESOURCE = "db/migration/idem/V1__processed_events.sql";

  /**
   * Classpath location of the script that adds the dead-letter decision columns to a table made
   * by {@link #MIGRATION_RESOURCE} (run after it; {@code createTableIfMissing} runs both): {@value}.
   * Without them the store works as before and records no decision (logged at start-up).
   */
  public static final String DEAD_LETTERS_MIGRATION_RESOURCE =
      "db/migration/idem/V3__processed_events_dead_letters.sql";

  /**
   * Classpath location of the script that creates the attempts table — the processed-events
   * table's name with the suffix {@value #ATTEMPTS_SUFFIX} — where {@link #startAttempt} counts
   * handler runs that may not be counted by the broker (run after {@link #MIGRATION_RESOURCE};
   * {@code createTableIfMissing} runs it): {@value}. Without the table the store keeps no counts
   * (logged at start-up) and a message that kills the process may loop.
   */
  public static final String ATTEMPTS_MIGRATION_RESOURCE =
      "db/migration/idem/V4__processed_events_attempts.sql";

  /** Suffix of the attempts table's name, after the processed-events table's: {@value}. */
  public static final String ATTEMPTS_SUFFIX = "_attempts";

  /**
   * Default {@link Builder#claimLockTimeout(Duration)}: 2 seconds. Below the time a Kafka consumer
   * may spend on one record with the client's defaults ({@code max.poll.interval.ms} 5 min over
   * {@code max.poll.records} 100 = 3 s), so a claim stuck behind another instance's open
   * transaction gives up and is retried before the consumer would be thrown out of its group.
   */
  public static final Duration DEFAULT_CLAIM_LOCK_TIMEOUT = Duration.ofSeconds(2);

  private final SqlSessionFactory sessions;
  private final TableName table;
  private final ExecutorType executorType;
  private final @Nullable TransactionIsolationLevel isolation;
  private final String lockTimeout;
  private final Dialect dialect;
  /** {@link #confirmsWithoutMarkers()}: PostgreSQL through pgjdbc, read at build. */
  private final boolean confirmsWithoutMarkers;
  private final String namespace;
  private final String existsStatement;
  private final String purgeStatement;
  /** The attempts table ({@link #ATTEMPTS_SUFFIX}), {@code null} when its name is too long. */
  private final @Nullable TableName attemptsTable;
  private final @Nullable String attemptsNamespace;
  /** Whether the attempts table exists: assumed with {@code verifyTable(false)}, read at start-up otherwise. */
  private volatile boolean attemptCounts;
  /**
   * Whether the table has the columns of {@link #DEAD_LETTERS_MIGRATION_RESOURCE}: assumed with
   * {@code verifyTable(false)}, read at start-up otherwise.
   */
  private volatile boolean deadLetterColumns = true;
  private final ClaimStatement claims;
  private final CheckedCommit commit;
  private final MariaDbClaimCheck claimCheck;
  private final FailureClassifier failures;
  private final AtomicLong autoCommitRefusals = new AtomicLong();
  private final AtomicBoolean otherDriverLogged = new AtomicBoolean();

  private MyBatisProcessedEventStore(Builder b) {
    this.sessions = b.sessions;
    this.table = TableName.of(b.tableName);
    this.executorType = b.executorType;
    this.isolation = b.isolation;
    this.dialect = b.resolved;
    this.confirmsWithoutMarkers = b.resolved == Dialect.POSTGRESQL && b.driverStateReadable;
    this.lockTimeout = dialect.lockTimeout(b.claimLockTimeout);
    this.namespace = ProcessedEventsMapper.register(sessions.getConfiguration(), table, dialect);
    this.existsStatement = namespace + ".exists";
    this.purgeStatement = namespace + ".purge";
    this.attemptsTable = attemptsTable(table);
    this.attemptsNamespace = attemptsTable == null ? null : ProcessedEventsMapper.register(
        sessions.getConfiguration(), ProcessedEventsMapper.ATTEMPT_TEMPLATE,
        "io.idem.store.jdbc.Attempts.", attemptsTable, "startAttempt", dialect);
    this.attemptCounts = attemptsTable != null;
    this.claims = new ClaimStatement(sessions.getConfiguration(), namespace, table, lockTimeout, dialect,
        b.restoreLockTimeoutAfterClaim);
    Supplier<SqlSession> freshSession = () -> sessions.openSession(executorType, false);
    this.claimCheck = new MariaDbClaimCheck(table);
    this.commit = new CheckedCommit(freshSession, table, dialect, claimCheck);
    this.failures = new FailureClassifier(freshSession, commit, dialect);
  }

  /**
   * The attempts table of {@code table}, or {@code null} when the name with the suffix would be
   * longer than PostgreSQL's 63 characters (the store then keeps no counts).
   */
  static @Nullable TableName attemptsTable(TableName table) {
    try {
      return TableName.of(table.qualified() + ATTEMPTS_SUFFIX);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Starts building a store on the application's session factory. */
  public static Builder builder(SqlSessionFactory sessions) {
    return new Builder(sessions);
  }

  /**
   * The database the store runs on: {@link Builder#dialect(Dialect)}, or read from the JDBC
   * metadata at {@link Builder#build()}.
   */
  public Dialect dialect() {
    return dialect;
  }

  /** The table, lower-cased as PostgreSQL stores it. */
  public String tableName() {
    return table.qualified();
  }

  /** A session opened like the store's own transactions (auto-commit off); for {@link RetentionJob}. */
  SqlSession openRetentionSession() {
    return openSession();
  }

  /** The application's factory, where {@link RetentionJob} registers its statements. */
  SqlSessionFactory sessionFactory() {
    return sessions;
  }

  /**
   * Runs {@code work} in a new transaction on one session of the factory: commits when it returns,
   * rolls back when it throws, and classifies every failure once, as the class documentation's
   * table says (the rules of {@link ProcessedEventStore#inTransaction}).
   *
   * <p>On the success path the round trips are the work's own statements and one more that
   * checks the claiming transaction id and COMMITs (when the work claimed a key on pgjdbc); a
   * failure costs a few more (rollback, {@link Connection#isValid}, possibly a fresh connection,
   * and one statement removing a marker the work committed early by SQL text).
   *
   * <p>Thread-safe: each call has its own session, confined to the calling thread.
   *
   * @throws StoreUnavailableException no session or connection could be had, or the
   *     transaction's connection broke and a fresh one fails too (a COMMIT that failed this way
   *     may or may not have committed: a redelivery finds out)
   * @throws TransactionRetryException PostgreSQL asked for a retry (40001, 40P01) or the claim's
   *     lock wait ran out (55P03)
   * @throws IllegalStateException the work ended Idem's transaction itself (a swallowed SQL error,
   *     a SQL-text COMMIT, END or ROLLBACK); rolled back, and a marker it committed early removed
   * @throws Exception whatever else the work or its COMMIT threw, unchanged
   */
  @Override
  public <T> T inTransaction(TransactionWork<SqlSession, T> work) throws Exception {
    SqlSession session = openTransactionSession();
    try {
      return runAndCommit(session, new OpenTransaction(), work, null).result();
    } finally {
      closeSession(session);
    }
  }

  /**
   * Opens a run ({@link TransactionRun}): on pgjdbc at PostgreSQL's default isolation (no {@link
   * Builder#isolation} set, or READ COMMITTED) and with no MyBatis second-level cache configured,
   * each transaction that claimed (a new key, or a duplicate) and is about to commit sends, in the
   * same round trip as its COMMIT, {@code BEGIN} and the claim of the key the run announces next;
   * the session and its open transaction are kept for the run's next call. A new message then
   * costs two round trips (the handler's statement, and the check with the COMMIT and the next
   * claim), a duplicate one. The carried transaction is used only when the next call claims exactly
   * that key with that fingerprint, and rolled back otherwise or by {@link TransactionRun#close()}.
   * A claim answered CONFLICT carries nothing (its settlement reads the store on other connections).
   *
   * <p>When the claim sent with the COMMIT fails (for example it waited longer than {@link
   * Builder#claimLockTimeout} behind another transaction holding that key), the COMMIT before it
   * stands — PostgreSQL's {@code txid_status} of the claiming transaction says so — and the next
   * call claims again on its own; the failure is then that call's, classified as usual. The
   * acknowledgement of a message therefore waits for the next key's claim too, at most the claim
   * lock timeout.
   *
   * <p>When the carried session breaks under the next call's work and a fresh connection works,
   * the failure is a {@link TransactionRetryException}, not the work's: the session sat idle in
   * its transaction between the two calls, where the server may have ended it ({@code
   * idle_in_transaction_session_timeout}, an administrator, a restart).
   *
   * <p>Not thread-safe: a run belongs to the thread that opened it; it holds one pooled connection
   * between its calls while a transaction is carried (also while the pipeline's {@code afterCommit}
   * and {@code onOutcome} listeners of the previous message run).
   */
  @Override
  public TransactionRun<SqlSession> openRun() {
    return new Run();
  }

  /**
   * Longest time a run keeps one pooled connection before it commits a transaction alone and hands
   * the connection back: 1 second. Pools act on connections held long — MyBatis' {@code
   * PooledDataSource} takes back one out for {@code poolMaximumCheckoutTime} (20 s) when it runs
   * short, HikariCP's {@code leakDetectionThreshold} logs a leak warning — and a run of slow
   * handlers would otherwise keep its connection for a whole poll's records.
   */
  static final Duration MAX_RUN_CHECKOUT = Duration.ofSeconds(1);

  /** {@link #openRun()}'s run. Confined to its thread. */
  private final class Run implements TransactionRun<SqlSession> {
    /** The session whose transaction was begun with the claim of the announced key, if any. */
    private @Nullable SqlSession carriedSession;
    private @Nullable OpenTransaction carried;
    /** The claim sent ahead that ran out of its lock timeout, if the last call's did. */
    private @Nullable NextClaim timedOut;
    /** When the session in use (or carried) was taken from the pool, {@link System#nanoTime()}. */
    private long sessionOpenedNanos;

    @Override
    public <T> T inTransaction(TransactionWork<SqlSession, T> work, IdempotencyKey key,
        byte[] payloadFingerprint, Supplier<@Nullable NextClaim> next) throws Exception {
      NextClaim waited = timedOut;
      timedOut = null;
      if (waited != null && waited.key().equals(key)
          && Arrays.equals(waited.payloadFingerprint(), payloadFingerprint)) {
        // the claim sent ahead already waited the whole lock timeout behind another transaction
        // holding this key: retried (not an attempt) without making the record wait a second time
        throw new TransactionRetryException("the claim of key '" + key.value() + "' sent with the"
            + " previous message's COMMIT waited longer than the claim lock timeout (" + lockTimeout
            + ") behind another transaction holding the same key; not claimed again now", null);
      }
      SqlSession session = carriedSession;
      OpenTransaction transaction = carried;
      carriedSession = null;
      carried = null;
      if (session != null && transaction != null
          && !transaction.preclaimedFor(key.consumerGroup(), key.value(), payloadFingerprint)) {
        rollBackAndClose(session);
        session = null;
      }
      if (session == null || transaction == null) {
        session = openTransactionSession();
        transaction = new OpenTransaction();
        sessionOpenedNanos = System.nanoTime();
      }
      boolean keep = false;
      try {
        // asked just before the COMMIT: past the bound, this transaction commits alone
        long opened = sessionOpenedNanos;
        Supplier<@Nullable NextClaim> bounded =
            () -> System.nanoTime() - opened < MAX_RUN_CHECKOUT.toNanos() ? next.get() : null;
        Committed<T> committed = runAndCommit(session, transaction, work, bounded);
        // this transaction committed; begun is the next one, if carried
        if (committed.begun() != null) {
          carriedSession = session;
          carried = committed.begun();
          keep = true;
        }
        timedOut = committed.timedOut();
        return committed.result();
      } finally {
        if (!keep) {
          closeSession(session);
        }
      }
    }

    @Override
    public void close() {
      SqlSession session = carriedSession;
      carriedSession = null;
      carried = null;
      timedOut = null;
      if (session != null) {
        rollBackAndClose(session);
      }
    }
  }

  /**
   * Runs {@code sql} in {@code transaction} as part of its commit: when the transaction is one of
   * this store's ({@link #inTransaction}'s session), has claimed a key and runs on pgjdbc, the
   * statement is queued and sent in the COMMIT's round trip, before the commit check (one
   * PreparedStatement: the queued statements, the check and the COMMIT under one Sync, so no round
   * trip of its own). It then commits with the transaction or not at all: if it fails, PostgreSQL
   * skips the check and the COMMIT, the transaction is rolled back, and the failure — the
   * driver's {@link SQLException}, unchanged — is the transaction's, classified as any (40001 and
   * 40P01 a {@link TransactionRetryException}, an integrity violation a handler failure the retry
   * policy does not retry, docs/FAILURES.md). Its parameters are bound in order ({@code byte[]}
   * as bytes, {@code null} as SQL NULL, anything else with {@link
   * java.sql.PreparedStatement#setObject}); it must not end the transaction, and what it returns
   * is not read. A division by zero (22012) raised by it is taken for the commit check's (the
   * handler ended the transaction): a handler failure either way, rolled back.
   *
   * <p>Otherwise — MariaDB or another driver, nothing claimed, or a session not opened by this
   * store (the Spring starter's store) — it runs at once on the transaction's connection, one
   * round trip, and a failure is thrown from here.
   *
   * <p>For statements whose outcome the work needs no more than "committed with it": idem-http's
   * stored response. Confined to the transaction's thread, like the session.
   *
   * @return {@code -1} when the statement was queued for the COMMIT's round trip (its row count is
   *     not read: the commit check then vouches that the transaction is still the claim's); else
   *     its update count ({@link java.sql.Statement#getUpdateCount}: on MariaDB Connector/J the
   *     rows matched, unless the pool sets {@code useAffectedRows}), which the caller checks
   * @throws SQLException when it ran at once and failed
   */
  public static int executeBeforeCommit(SqlSession transaction, String sql, @Nullable Object... parameters)
      throws SQLException {
    Objects.requireNonNull(transaction, "transaction");
    Objects.requireNonNull(sql, "sql");
    OpenTransaction open = GuardedSession.transactionOf(transaction);
    Connection connection = GuardedSession.unguarded(transaction).getConnection();
    if (open != null && CheckedCommit.sendsCheck(open, connection)) {
      open.beforeCommit(new OpenTransaction.BeforeCommit(sql, Arrays.asList(parameters.clone())));
      return -1;
    }
    try (java.sql.PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < parameters.length; i++) {
        CheckedCommit.bind(statement, i + 1, parameters[i]);
      }
      statement.execute();
      return statement.getUpdateCount();
    }
  }

  /**
   * Whether the claim of {@code transaction} (a session of {@link #inTransaction}) bounded its own
   * lock wait only, so the statements after it keep the transaction's {@code lock_timeout}:
   * {@link Builder#restoreLockTimeoutAfterClaim} on PostgreSQL, always on MariaDB. {@code false}
   * before a claim, and for a session this store did not open.
   */
  public static boolean lockTimeoutRestoredAfterClaim(SqlSession transaction) {
    OpenTransaction open = GuardedSession.transactionOf(transaction);
    return open != null && open.isLockTimeoutRestored();
  }

  /** Opens a session for a transaction and refuses one in auto-commit mode (both: no round trip). */
  private SqlSession openTransactionSession() {
    SqlSession session;
    try {
      session = openSession();
    } catch (RuntimeException e) {
      throw new StoreUnavailableException(
          "could not open a database session: " + TransientFailures.rootMessage(e), e);
    }
    try {
      requireTransaction(session);
    } catch (RuntimeException e) {
      closeSession(session);
      throw e;
    }
    return session;
  }

  /** What a run's transaction returned, and the next transaction begun with its COMMIT, if any. */
  private record Committed<T>(T result, @Nullable OpenTransaction begun, @Nullable NextClaim timedOut) {}

  /**
   * Runs the work in the session's transaction and commits it, failures classified once; in a run
   * ({@code next} given) the next claim is sent with the COMMIT when it may be.
   */
  private <T> Committed<T> runAndCommit(SqlSession session, OpenTransaction transaction,
      TransactionWork<SqlSession, T> work, @Nullable Supplier<@Nullable NextClaim> next) throws Exception {
    T result;
    try {
      result = work.run(GuardedSession.wrap(session, transaction));
      if (transaction.preclaimUntaken()) {
        throw new IllegalStateException("the transaction was begun with the claim of another key than"
            + " the one its work claimed; rolled back");
      }
    } catch (Throwable failure) {
      throw failures.failed(session, transaction, failure);
    }
    try {
      // asked inside the try: whatever escapes it still rolls this transaction back
      NextClaim following = next != null && carries(session, transaction) ? ask(next) : null;
      if (following == null) {
        commit.commit(session, transaction);
        return new Committed<>(result, null, null);
      }
      CheckedCommit.AfterCommit after = commit.commitAndClaim(session, transaction, claims, following);
      return new Committed<>(result, after.begun(), after.nextClaimTimedOut() ? following : null);
    } catch (Throwable failure) {
      throw failures.failed(session, transaction, failure);
    }
  }

  /** Whether a transaction that is about to commit may carry the next claim (see {@link #openRun()}). */
  private boolean carries(SqlSession session, OpenTransaction transaction) {
    ClaimResult answered = transaction.answered();
    return (answered == ClaimResult.CLAIMED || answered == ClaimResult.DUPLICATE)
        && transaction.statementsBeforeCommit().isEmpty()
        && (isolation == null || isolation == TransactionIsolationLevel.READ_COMMITTED)
        && sessions.getConfiguration().getCaches().isEmpty()
        && DriverTransactions.ofAnyDriver(session.getConnection()) == DriverTransactions.State.OPEN;
  }

  private static @Nullable NextClaim ask(Supplier<@Nullable NextClaim> next) {
    try {
      NextClaim claim = next.get();
      return claim != null && claim.payloadFingerprint().length == 32 ? claim : null;
    } catch (RuntimeException | Error e) {
      if (e instanceof VirtualMachineError && !(e instanceof StackOverflowError)) {
        throw e;
      }
      LOG.debug("the next claim of the run could not be had; committing alone", e);
      return null;
    }
  }

  private static void rollBackAndClose(SqlSession session) {
    try {
      session.rollback(true);
    } catch (RuntimeException e) {
      LOG.debug("rolling back a carried transaction failed; the pool discards the connection", e);
    }
    closeSession(session);
  }

  private static void closeSession(SqlSession session) {
    try {
      session.close();
    } catch (RuntimeException e) {
      LOG.debug("closing the session failed; the pool discards the connection", e);
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

  /**
   * Claims {@code key} with one statement (one round trip) — see the class documentation: the
   * statement sets the transaction-local {@code lock_timeout} to {@link Builder#claimLockTimeout},
   * inserts the marker unless the key exists, and returns either the claiming transaction id (new)
   * or the stored fingerprint (duplicate or conflict). Only when it returns no row — it waited for
   * a racing transaction that then committed, whose row the statement's snapshot (taken before
   * the wait, PostgreSQL's READ COMMITTED rule) cannot see — a second statement reads the
   * fingerprint. Records the transaction id in the session for the commit check.
   *
   * <p>The {@code lock_timeout} stays set for the rest of the transaction, so it also bounds the
   * handler's statements; a lock timeout there is the handler's failure, not a retry of the
   * transaction.
   *
   * <p>Thread-safe as far as the store goes; {@code transaction} belongs to the calling thread.
   *
   * @throws TransactionRetryException the claim waited longer than the lock timeout (55P03), or
   *     PostgreSQL asked for a retry (40001 under REPEATABLE READ or SERIALIZABLE, 40P01)
   * @throws IllegalArgumentException when the fingerprint is not 32 bytes
   * @throws RuntimeException (MyBatis' PersistenceException) on any other database failure
   */
  @Override
  public ClaimResult claim(SqlSession transaction, IdempotencyKey key, byte[] payloadFingerprint) {
    Objects.requireNonNull(transaction, "transaction");
    Objects.requireNonNull(key, "key");
    if (payloadFingerprint.length != 32) {
      throw new IllegalArgumentException(
          "payloadFingerprint must be a 32-byte SHA-256, but had " + payloadFingerprint.length + " bytes");
    }
    return claims.claim(
        transaction, key.consumerGroup(), key.value(), key.source().name(), payloadFingerprint);
  }

  /**
   * Claims {@code keys} with one statement (one round trip) — the multi-row form of {@link #claim}:
   * the same transaction-local {@code lock_timeout}, then {@code INSERT … SELECT … FROM unnest(…)
   * ON CONFLICT DO NOTHING RETURNING} the keys really inserted and the transaction id, in a CTE
   * that also returns the stored fingerprint of every other key. Only the keys that come back in
   * neither form — a racing transaction committed them while the statement waited, after its
   * snapshot was taken — are read again, in one second statement for all of them. The distinct
   * keys are inserted in (group, key) order, so two batches sharing keys do not deadlock on the
   * markers; the lock timeout bounds each wait on its own. The transaction id is recorded for the
   * commit check, which is the same as for one key.
   *
   * <p>On MariaDB: one {@code INSERT IGNORE … RETURNING} of the distinct keys in the same order
   * (one statement for new keys; with existing ones, two more: the statement's warnings and a
   * locking read of the stored fingerprints), whose answer is refused — a {@link
   * org.apache.ibatis.exceptions.PersistenceException}, nothing claimed — when IGNORE turned
   * anything but a duplicate key into a warning (docs/STORE.md,
   * "Databases"). Errors 1205 and 1213 are transaction retries.
   *
   * <p>Thread-safe as far as the store goes; {@code transaction} belongs to the calling thread.
   *
   * @throws IllegalArgumentException when the lists differ in size or a fingerprint is not 32
   *     bytes
   * @throws TransactionRetryException one key's wait ran out of the lock timeout (55P03), or
   *     PostgreSQL asked for a retry (40001, 40P01)
   * @throws RuntimeException (MyBatis' PersistenceException) on any other database failure
   */
  @Override
  public List<ClaimResult> claimAll(
      SqlSession transaction, List<IdempotencyKey> keys, List<byte[]> payloadFingerprints) {
    Objects.requireNonNull(transaction, "transaction");
    if (keys.size() != payloadFingerprints.size()) {
      throw new IllegalArgumentException("keys and payloadFingerprints must have the same size, but"
          + " had " + keys.size() + " and " + payloadFingerprints.size());
    }
    for (byte[] fingerprint : payloadFingerprints) {
      if (fingerprint.length != 32) {
        throw new IllegalArgumentException(
            "payloadFingerprints must be 32-byte SHA-256s, but one had " + fingerprint.length + " bytes");
      }
    }
    if (keys.isEmpty()) {
      return new ArrayList<>();
    }
    return claims.claimAll(transaction, keys, payloadFingerprints);
  }

  /**
   * Checks, with no round trip, that the handler left the transaction able to commit, from the
   * state pgjdbc keeps from the server's {@code ReadyForQuery} messages: {@code FAILED} means the
   * handler swallowed an SQL error (PostgreSQL aborted the transaction and would turn its COMMIT
   * into a rollback); {@code IDLE} means the handler ended the transaction itself. A SQL-text
   * COMMIT or ROLLBACK followed by more statements leaves pgjdbc in a new transaction that looks
   * {@code OPEN}: that is caught at the commit, where the transaction id recorded by the claim is
   * checked in the same round trip as the COMMIT.
   *
   * <p>On MariaDB the marker is re-read in the transaction (a statement in a transaction InnoDB
   * rolled back under the handler — a swallowed deadlock — finds no marker). In a transaction of
   * this store's {@link #inTransaction} the re-read is not sent here: the key is recorded and its
   * marker counted, with every other key confirmed in the transaction, in the COMMIT's round trip
   * ({@link MariaDbClaimCheck}; no round trip of its own), and a marker found missing fails the
   * transaction there, nothing committed, with the same {@link IllegalStateException}. In a
   * session this store did not open (the Spring starter's store, whose commit is Spring's) it is
   * re-read at once, one round trip. A SQL-text COMMIT is not detected on MariaDB.
   *
   * <p>On another driver (logged once at INFO) it re-reads the marker at once (one round trip):
   * a statement in an aborted transaction fails, and a marker that is gone means the transaction
   * was rolled back under the store; a SQL-text COMMIT is not detected there.
   *
   * <p>Thread-safe as far as the store goes; {@code transaction} belongs to the calling thread.
   *
   * @throws IllegalStateException when the claim is no longer held: a handler failure
   */
  @Override
  public void confirmClaim(SqlSession transaction, IdempotencyKey key) {
    confirm(transaction, List.of(key));
  }

  /**
   * The check of {@link #confirmClaim} for {@code keys} (at least one): pgjdbc's state is the
   * connection's, so it is read and judged once for all of them (a failure names the first key).
   */
  private void confirm(SqlSession transaction, List<IdempotencyKey> keys) {
    DriverTransactions.State state = DriverTransactions.ofAnyDriver(transaction.getConnection());
    if (state == null) {
      confirmByQuery(transaction, keys);
      return;
    }
    IdempotencyKey key = keys.get(0);
    if (state == DriverTransactions.State.FAILED) {
      throw new IllegalStateException("the handler of key '" + key.value() + "' swallowed a database"
          + " error: PostgreSQL aborted the transaction, so its COMMIT would roll back; nothing is"
          + " applied (let the exception propagate, or roll back to a savepoint)");
    }
    if (state == DriverTransactions.State.IDLE) {
      throw new IllegalStateException("the handler of key '" + key.value() + "' ended Idem's"
          + " transaction (a SQL-text COMMIT, END or ROLLBACK); the rest is rolled back and a marker"
          + " it committed removed, but what it wrote before its own COMMIT or END stays committed");
    }
  }

  /**
   * {@link #confirmClaim} for every key of a batch handler's run. On pgjdbc the driver's state,
   * read once for the connection (no round trip). On MariaDB, in a transaction of this store's: the keys
   * are recorded and counted with the COMMIT (one statement with it, whatever the number up to
   * 1,000 keys; {@link MariaDbClaimCheck}); in a session this store did not open: counted at once,
   * one statement per 1,000 keys. On another driver: one re-read per key.
   *
   * @throws IllegalStateException when a claim is no longer held: the batch's transaction fails
   */
  @Override
  public void confirmClaims(SqlSession transaction, List<IdempotencyKey> keys) {
    if (!keys.isEmpty()) {
      confirm(transaction, keys);
    }
  }
  /**
   * {@code true} on PostgreSQL through pgjdbc, where {@link #confirmClaim} reads the driver's
   * transaction state and needs no marker (read at {@code build()} from a real connection; assumed
   * when the database could not be reached then); {@code false} on MariaDB, where the claim check
   * counts the transaction's markers with the COMMIT, and on connections that do not unwrap to
   * pgjdbc, where it re-reads the marker — so a naturally idempotent pipeline (no markers) is
   * refused when it is built instead of failing every message.
   */
  @Override
  public boolean confirmsWithoutMarkers() {
    return confirmsWithoutMarkers;
  }


  private void confirmByQuery(SqlSession transaction, List<IdempotencyKey> keys) {
    if (dialect == Dialect.MARIADB) {
      OpenTransaction open = GuardedSession.transactionOf(transaction);
      if (otherDriverLogged.compareAndSet(false, true)) {
        LOG.info("on MariaDB each claim is confirmed by counting its marker in its transaction after"
            + " the handler, in the COMMIT's round trip (one statement for all the transaction's keys;"
            + " at once, one more round trip, in a transaction Idem does not commit): a swallowed"
            + " deadlock (InnoDB rolled the transaction back) is caught, a handler's SQL-text COMMIT"
            + " is not (docs/STORE.md, \"Databases\")");
      }
      if (open != null) {
        for (IdempotencyKey key : keys) {
          open.confirmAtCommit(key.consumerGroup(), key.value());
        }
        return;
      }
      List<MariaDbClaimCheck.Key> distinct = distinct(keys);
      boolean held;
      try {
        held = claimCheck.allHeld(GuardedSession.unguarded(transaction).getConnection(), distinct);
      } catch (SQLException e) {
        throw new PersistenceException("the check that the transaction still holds its claims failed: "
            + e.getMessage(), e);
      }
      if (!held) {
        throw claimsLost(distinct);
      }
      return;
    }
    if (otherDriverLogged.compareAndSet(false, true)) {
      LOG.info("the connections are not pgjdbc's (org.postgresql.core.BaseConnection): each claim is"
          + " confirmed by a query after the handler (one more round trip), and a handler's SQL-text"
          + " COMMIT is not detected");
    }
    for (IdempotencyKey key : keys) {
      Map<String, Object> params = new HashMap<>();
      params.put("consumerGroup", key.consumerGroup());
      params.put("key", key.value());
      Boolean held = transaction.selectOne(existsStatement, params);
      if (!Boolean.TRUE.equals(held)) {
        throw claimsLost(List.of(new MariaDbClaimCheck.Key(key.consumerGroup(), key.value())));
      }
    }
  }

  private static List<MariaDbClaimCheck.Key> distinct(List<IdempotencyKey> keys) {
    LinkedHashSet<MariaDbClaimCheck.Key> distinct = new LinkedHashSet<>();
    for (IdempotencyKey key : keys) {
      distinct.add(new MariaDbClaimCheck.Key(key.consumerGroup(), key.value()));
    }
    return new ArrayList<>(distinct);
  }

  /** The failure of a claim check that found markers missing: a handler failure. */
  static IllegalStateException claimsLost(List<MariaDbClaimCheck.Key> keys) {
    if (keys.size() == 1) {
      return new IllegalStateException("the claim of key '" + keys.get(0).key() + "' is no longer held"
          + " by its transaction (was the transaction rolled back under the handler — a deadlock it"
          + " swallowed — or ended by it?); nothing is applied");
    }
    return new IllegalStateException("the claims of " + keys.size() + " keys (the first '"
        + keys.get(0).key() + "') are no longer held by their transaction (was the transaction rolled"
        + " back under a handler — a deadlock it swallowed — or ended by it?); nothing is applied");
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
      deadLetterColumns = StartupChecks.run(session, namespace, table, dialect);
      attemptCounts = attemptsTable != null && Boolean.TRUE.equals(session.selectOne(
          attemptsNamespace + ".attemptsTableExists", attemptsTable.params()));
      if (!attemptCounts) {
        LOG.warn("{}: no attempts table {} ({}): attempts are counted as the broker counts them, so"
            + " a message whose handler kills the process may be redelivered without end; apply"
            + " it, or build with createTableIfMissing(true)", table.qualified(),
            attemptsTable == null ? "(the name would be over 63 characters)"
                : attemptsTable.qualified(), ATTEMPTS_MIGRATION_RESOURCE);
      }
      StartupChecks.logIsolation(session, namespace, isolation, dialect);
      ClaimProbe.run(session, claims, namespace, table);
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
    // MariaDB keeps the times in UTC (DATETIME): the cutoff as a UTC wall-clock time, no zone applied
    params.put("beforeUtc", LocalDateTime.ofInstant(processedBefore, ZoneOffset.UTC));
    params.put("maxRows", maxRows);
    try {
      return inTransaction(session -> {
        int markers = session.delete(purgeStatement, params);
        int counts = attemptCounts ? session.delete(attemptsNamespace + ".purgeAttempts", params) : 0;
        return Math.max(markers, counts);
      });
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
      Boolean exists = session.selectOne(
          deadLetterColumns ? namespace + ".processed" : existsStatement, params);
      return Boolean.TRUE.equals(exists);
    } catch (RuntimeException e) {
      if (TransientFailures.isTransient(e)) {
        throw new StoreUnavailableException("lookup failed: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  /**
   * Writes the key's marker with outcome {@code DEAD_LETTERED}, the reason and {@link
   * DeadLetterDecision#markerFingerprint()} (so the claim needs no change), in a transaction of
   * its own ({@code INSERT … ON CONFLICT DO UPDATE … WHERE outcome = 'DEAD_LETTERED'}: a processed
   * marker is never overwritten); an open claim of the key makes it wait, up to the claim lock
   * timeout. Records nothing on a table without the columns of {@link
   * #DEAD_LETTERS_MIGRATION_RESOURCE}. Thread-safe.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure
   */
  @Override
  public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
    if (!deadLetterColumns) {
      return false;
    }
    Map<String, Object> params = keyParams(key);
    params.put("keySource", key.source().name());
    params.put("fingerprint", DeadLetterDecision.markerFingerprint()); // every claim: CONFLICT
    params.put("cause", decision.cause().name());
    params.put("detail", decision.detail());
    params.put("exceptionClass", decision.exceptionClass());
    params.put("brokerMessageId", decision.brokerMessageId());
    params.put("lockTimeout", lockTimeout);
    params.put("lockWaitSeconds", lockWaitSeconds());
    return ownTransaction("recording a dead-letter decision", session -> {
      int recorded = dialect == Dialect.MARIADB
          ? ("DEAD_LETTERED".equals(session.selectOne(namespace + ".recordDeadLetter", params)) ? 1 : 0)
          : session.insert(namespace + ".recordDeadLetter", params);
      clearAttempts(session, key); // a replay of the dead letter starts with a fresh count
      return recorded;
    }) == 1;
  }

  /**
   * The decision {@link #recordDeadLetter} wrote for {@code key}, in one read outside any
   * transaction; {@code null} for a processed marker, no marker, or a table without the columns.
   * Thread-safe.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   */
  @Override
  public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
    if (!deadLetterColumns) {
      return null;
    }
    Map<String, Object> params = keyParams(key);
    Map<String, Object> row;
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, true)) {
      row = session.selectOne(namespace + ".deadLetterDecision", params);
    } catch (RuntimeException e) {
      if (TransientFailures.isTransient(e)) {
        throw new StoreUnavailableException("dead-letter decision lookup failed: " + e.getMessage(), e);
      }
      throw e;
    }
    if (row == null) {
      return null;
    }
    return new DeadLetterDecision(
        DeadLetterCause.valueOf(Rows.required(row, "cause", String.class)),
        Rows.required(row, "detail", String.class),
        (String) row.get("exceptionClass"),
        (String) row.get("brokerMessageId"));
  }

  /**
   * Deletes the key's dead-letter marker recorded for {@code brokerMessageId}, in a transaction of
   * its own; a processed marker is never deleted. Thread-safe.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   */
  @Override
  public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
    if (!deadLetterColumns) {
      return false;
    }
    Map<String, Object> params = keyParams(key);
    params.put("brokerMessageId", brokerMessageId);
    return ownTransaction("releasing a dead-letter decision", session -> {
      int released = session.delete(namespace + ".releaseDeadLetter", params);
      clearAttempts(session, key);
      return released;
    }) == 1;
  }

  /**
   * One more run of {@code key}'s handler, counted in the attempts table ({@link
   * #ATTEMPTS_MIGRATION_RESOURCE}) by one upsert in a transaction of its own (two round trips: the
   * upsert and the COMMIT); waits behind another transaction holding the key's row at most the
   * claim lock timeout. Returns {@code 0} without a round trip when the table is missing.
   * Thread-safe.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws TransactionRetryException the wait for the row's lock ran out, or PostgreSQL asked
   *     for a retry
   */
  @Override
  public int startAttempt(IdempotencyKey key) {
    if (!attemptCounts) {
      return 0;
    }
    Map<String, Object> params = keyParams(key);
    params.put("lockTimeout", lockTimeout);
    params.put("lockWaitSeconds", lockWaitSeconds());
    try {
      return ownTransaction("counting an attempt of key '" + key.value() + "'",
          session -> session.<Integer>selectOne(attemptsNamespace + ".startAttempt", params));
    } catch (TransactionRetryException | StoreUnavailableException e) {
      throw e;
    } catch (RuntimeException e) {
      SQLException ranOut = Dialect.find(e, dialect::lockWaitRanOut);
      if (ranOut != null && dialect == Dialect.MARIADB) {
        throw new TransactionRetryException("counting an attempt of key '" + key.value()
            + "' waited too long behind another transaction (" + dialect.describe(ranOut) + "): "
            + TransientFailures.rootMessage(e), e);
      }
      String state = TransientFailures.sqlState(e);
      if ("55P03".equals(state) || ClaimStatement.QUERY_CANCELED.equals(state)) {
        // another instance's transaction holds the key's count (it is running the message)
        throw new TransactionRetryException("counting an attempt of key '" + key.value()
            + "' waited too long behind another transaction (SQLSTATE " + state + "): "
            + TransientFailures.rootMessage(e), e);
      }
      throw e;
    }
  }

  /**
   * Deletes the key's attempt count inside {@code transaction} (one round trip); nothing without
   * the attempts table. Thread-safe as far as the store goes.
   */
  @Override
  public void clearAttempts(SqlSession transaction, IdempotencyKey key) {
    if (attemptCounts) {
      transaction.delete(attemptsNamespace + ".clearAttempts", keyParams(key));
    }
  }

  /**
   * The attempt count {@link #startAttempt} keeps for {@code key}, {@code 0} when there is none
   * (or no attempts table); outside any transaction, for operations and tests.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   */
  public int attempts(IdempotencyKey key) {
    if (!attemptCounts) {
      return 0;
    }
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, true)) {
      Integer count = session.selectOne(attemptsNamespace + ".attempts", keyParams(key));
      return count == null ? 0 : count;
    } catch (RuntimeException e) {
      if (TransientFailures.isTransient(e)) {
        throw new StoreUnavailableException("attempts lookup failed: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  /** The attempts table, {@code null} when the store keeps no counts; for {@link RetentionJob}. */
  @Nullable String attemptsNamespaceIfCounting() {
    return attemptCounts ? attemptsNamespace : null;
  }

  /** MariaDB's {@code innodb_lock_wait_timeout} of the store's statements (whole seconds); 0 on PostgreSQL. */
  private long lockWaitSeconds() {
    return dialect == Dialect.MARIADB ? Long.parseLong(lockTimeout) : 0;
  }

  private static Map<String, Object> keyParams(IdempotencyKey key) {
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", key.consumerGroup());
    params.put("key", key.value());
    return params;
  }

  private int ownTransaction(String what, TransactionWork<SqlSession, Integer> work) {
    try {
      return inTransaction(work);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new StoreUnavailableException(what + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "MyBatisProcessedEventStore[table=" + table.qualified() + ", executor=" + executorType
        + ", dialect=" + dialect
        + ", isolation=" + (isolation == null ? "the connection's" : isolation)
        + ", claimLockTimeout=" + lockTimeout + "]";
  }

  /** Builder of {@link MyBatisProcessedEventStore}; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final SqlSessionFactory sessions;
    private String tableName = DEFAULT_TABLE;
    private ExecutorType executorType = ExecutorType.SIMPLE;
    private @Nullable TransactionIsolationLevel isolation;
    private Duration claimLockTimeout = DEFAULT_CLAIM_LOCK_TIMEOUT;
    private boolean createTableIfMissing;
    private boolean verifyTable = true;
    private boolean restoreLockTimeoutAfterClaim;
    private @Nullable Dialect dialect;
    /** The dialect given or detected, set by {@link #build()}. */
    private Dialect resolved = Dialect.POSTGRESQL;
    /**
     * Whether the connections' transaction state is pgjdbc's (readable with no marker), read by
     * {@link #build()} from a real connection; {@code true} when the database could not be reached.
     */
    private boolean driverStateReadable = true;

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
     * Default {@code null}: keep the connection's own level (PostgreSQL's default is READ
     * COMMITTED, under which a racing claim waits and then sees the duplicate or conflict); no
     * statement is sent for it. {@link Builder#build()} reads the level once when it verifies and
     * logs it at INFO. REPEATABLE READ and SERIALIZABLE work too: a race or a write skew there
     * fails with SQLSTATE 40001, a {@link TransactionRetryException} (retried, not counted).
     *
     * <p>A level given here is applied by MyBatis to every session: pgjdbc sends {@code SET
     * SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL …}, one more round trip per
     * transaction. To pin a level without that cost, set it on the pool (for example the JDBC
     * URL's {@code options=-c default_transaction_isolation=…}, or HikariCP's {@code
     * transactionIsolation}, applied once per pooled connection).
     */
    public Builder isolation(@Nullable TransactionIsolationLevel value) {
      this.isolation = value;
      return this;
    }

    /**
     * How long a claim waits behind another open transaction that holds the same key (another
     * instance during a Kafka rebalance, a competing consumer with a slow handler) before giving
     * up with a {@link TransactionRetryException} (the pipeline's RETRY_TRANSACTION: retried, not
     * counted). Default {@link MyBatisProcessedEventStore#DEFAULT_CLAIM_LOCK_TIMEOUT} (2 s);
     * {@link Duration#ZERO} waits without bound; a positive value is rounded down to whole
     * milliseconds, at least 1 ms.
     *
     * <p>Set as PostgreSQL's transaction-local {@code lock_timeout} by the claim statement itself
     * ({@code set_config('lock_timeout', …, true)}), so it costs no round trip — and it bounds
     * every lock wait of the rest of the transaction too, the handler's statements included. A
     * handler statement that runs out of it fails with SQLSTATE 55P03: the handler's failure
     * (counted), not a transaction retry. A handler that needs a longer wait can raise it for its
     * own statements with {@code SET LOCAL lock_timeout = …}. It replaces, for the store's
     * transactions, any {@code lock_timeout} the connections were given (PostgreSQL aborts a
     * statement whose lock wait exceeds {@code lock_timeout}, with SQLSTATE 55P03; 0 disables
     * it). Not thread-safe, like the whole builder.
     *
     * @throws NullPointerException when {@code value} is null
     * <p>On MariaDB it is {@code innodb_lock_wait_timeout} for the claim's statement alone
     * ({@code SET STATEMENT … FOR INSERT …}, no round trip), in whole seconds rounded up; the
     * handler's statements keep the session's own value, and a 1205 there is a transaction retry
     * too (docs/FAILURES.md).
     *
     * @throws IllegalArgumentException when it is negative or longer than PostgreSQL's limit
     *     (2,147,483,647 ms)
     */
    public Builder claimLockTimeout(Duration value) {
      Objects.requireNonNull(value, "claimLockTimeout");
      if (value.isNegative() || value.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
        throw new IllegalArgumentException("claimLockTimeout must be between 0 (no bound) and "
            + Integer.MAX_VALUE + " ms, but was " + value);
      }
      this.claimLockTimeout = value;
      return this;
    }

    /**
     * Default {@code false}: the claim lock timeout ({@link #claimLockTimeout}) stays set for the
     * rest of the transaction, bounding the handler's lock waits too. {@code true} makes it bound
     * the claim's own lock wait only, at no extra round trip: on PostgreSQL the claim is sent as
     * three statements in its one round trip — the transaction's {@code lock_timeout} kept in a
     * custom setting ({@code idem.lock_timeout_before_claim}, transaction-local), the claim, and
     * {@code lock_timeout} set back to the kept value for the rest of the transaction
     * (transaction-local, so whatever the connection had — its server or role default, or a
     * session {@code SET} — comes back for the handler's statements). A claim that runs out of
     * its lock timeout fails the round trip there (PostgreSQL skips the rest), and the transaction
     * is rolled back anyway. A multi-key claim ({@code claimAll}) then costs two more round trips
     * (its statement is MyBatis-mapped). On MariaDB nothing changes: its claim's {@code SET
     * STATEMENT … FOR} already bounds that statement alone.
     *
     * <p>For a claim lock timeout much shorter than the handler's lock waits may take — the
     * Idempotency-Key endpoint's 1 ms, which answers a repeat of an in-flight key 409 at once
     * (docs/HTTP.md, "In flight").
     */
    public Builder restoreLockTimeoutAfterClaim(boolean value) {
      this.restoreLockTimeoutAfterClaim = value;
      return this;
    }

    /**
     * Default {@code null}: {@link #build()} reads the database from the JDBC metadata of one
     * connection ({@link java.sql.DatabaseMetaData#getDatabaseProductName()}) and refuses one it
     * does not support, naming it and the supported ones. Given, it must be the database's own
     * (checked when {@link #build()} reaches the database); with {@link #verifyTable(boolean)
     * verifyTable(false)} it is what lets {@code build()} pick the SQL without reaching the
     * database (otherwise {@code build()} still asks it, and assumes PostgreSQL, with a WARN, when
     * it cannot be reached).
     */
    public Builder dialect(@Nullable Dialect value) {
      this.dialect = value;
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
     * The database's dialect, read from one connection's metadata: refused when unsupported or
     * other than {@link #dialect(Dialect)}; {@link #dialect(Dialect)} (or PostgreSQL, with a WARN)
     * when the database cannot be reached and {@code verifyTable(false)} allows building without it.
     */
    private Dialect resolveDialect() {
      Dialect detected;
      try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, true)) {
        detected = Dialect.of(session.getConnection().getMetaData());
        driverStateReadable = DriverTransactions.ofAnyDriver(session.getConnection()) != null;
      } catch (IllegalStateException unsupported) {
        if (unsupported.getCause() == null) {
          throw unsupported;
        }
        return unreachable(unsupported);
      } catch (SQLException | RuntimeException e) {
        return unreachable(e);
      }
      if (dialect != null && dialect != detected) {
        throw new IllegalStateException("dialect(" + dialect + ") was given, but the"
            + " SqlSessionFactory's database is " + detected.displayName());
      }
      return detected;
    }

    private Dialect unreachable(Exception e) {
      if (verifyTable) {
        throw StartupChecks.failure("could not read which database the SqlSessionFactory reaches", e);
      }
      if (dialect != null) {
        return dialect;
      }
      LOG.warn("could not read which database the SqlSessionFactory reaches ({}); assuming {}: give"
          + " dialect(…) to build with verifyTable(false) before the database is up",
          TransientFailures.rootMessage(e), Dialect.POSTGRESQL.displayName());
      return Dialect.POSTGRESQL;
    }

    /**
     * Validates, creates the table when asked, and runs the {@link #verifyTable(boolean) checks}.
     *
     * @throws IllegalArgumentException when the table name is not a plain identifier (or is a
     *     reserved word) or the executor type is BATCH
     * @throws IllegalStateException when the factory has no Environment or uses MyBatis'
     *     ManagedTransactionFactory (whatever {@code verifyTable} says), when the database is not
     *     one the store supports ({@link Dialect}: the message names it and the supported ones) or
     *     not the {@link #dialect(Dialect)} given, when the sessions are in
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
      resolved = resolveDialect();
      if (createTableIfMissing) {
        ProcessedEventsSchema.apply(sessions, table, resolved);
      }
      MyBatisProcessedEventStore store = new MyBatisProcessedEventStore(this);
      if (verifyTable) {
        store.checkAtStartup();
      }
      return store;
    }
  }
}
