package io.idem.spring;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import io.idem.store.jdbc.Dialect;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Idem's processed-events store inside a Spring application: every {@link #inTransaction} opens
 * a new transaction through the application's {@link PlatformTransactionManager} (a {@link
 * TransactionTemplate}), claims the key on the connection that transaction manager binds to the
 * thread, runs the handler — whose {@code JdbcTemplate}, {@code JdbcClient}, JPA or MyBatis-Spring
 * writes join the same transaction, since they all take the bound connection — and lets the
 * transaction manager commit. So the marker and the handler's writes commit together, by Spring's
 * commit, and the pipeline acknowledges only after it.
 *
 * <p>The claim, its SQL and its failure rules are store-jdbc's ({@link MyBatisProcessedEventStore},
 * docs/STORE.md): this class delegates {@link #claim}, {@link #claimAll}, {@link #confirmClaim}, {@link #confirmClaims},
 * {@link #startAttempt}, {@link #clearAttempts}, {@link #purge} and {@link #isProcessed} to one, built on a MyBatis factory over the same {@link
 * DataSource} whose sessions use the Spring-bound connection inside the transaction ({@link
 * SpringBoundTransactionFactory}). What it does not do, because Spring commits: store-jdbc's
 * check, in the COMMIT's round trip, that the handler did not end the transaction by SQL text
 * (docs/SPRING-BOOT.md, "Limits"). The check after the handler ({@link #confirmClaim}: a
 * swallowed SQL error, an ended transaction) is kept.
 *
 * <h2>Refused: an outer transaction</h2>
 *
 * {@link #inTransaction} throws {@link IllegalStateException} without claiming when the calling
 * thread is already inside a Spring transaction (a {@code @Transactional} caller, a listener
 * container with a transaction manager): joined, Idem's marker would commit only when that outer
 * transaction does, after the message was acknowledged.
 *
 * <h2>Who failed</h2>
 *
 * As {@link ProcessedEventStore#inTransaction} requires: the transaction manager could not begin
 * (no connection) → {@link StoreUnavailableException}; the database asking for a retry anywhere
 * in the failure (claim, handler, COMMIT) — PostgreSQL's SQLSTATE 40001 or 40P01, MariaDB's errors
 * 1213 (deadlock) or 1205 (lock wait timeout) or SQLSTATE 40001 ({@link Dialect#retryRequestIn})
 * — and the claim's lock timeout → {@link TransactionRetryException}; a failure whose SQLSTATE is a connection exception (class 08) when a
 * fresh connection of the data source cannot be had either → {@link StoreUnavailableException};
 * anything else the work or the commit threw, unchanged.
 *
 * <p>Thread-safe; one instance serves every worker, each {@link #inTransaction} on its own
 * thread's transaction.
 */
public final class SpringTransactionStore implements ProcessedEventStore<SqlSession> {

  static final String OUTER_TRANSACTION_REFUSED = "Idem must open and commit the message's"
      + " transaction itself, but this thread is already inside a Spring transaction (a"
      + " @Transactional method calling the listener, or a listener container configured with a"
      + " transaction manager). Joined, the processed-events marker would commit only with that"
      + " outer transaction, after the message was acknowledged. Remove the outer transaction"
      + " (the container's transactionManager, the @Transactional on the caller); nothing was"
      + " claimed";

  private final DataSource dataSource;
  private final TransactionTemplate transactions;
  private final SqlSessionFactory sessions;
  private final MyBatisProcessedEventStore delegate;

  private SpringTransactionStore(
      DataSource dataSource, TransactionTemplate transactions, SqlSessionFactory sessions,
      MyBatisProcessedEventStore delegate) {
    this.dataSource = dataSource;
    this.transactions = transactions;
    this.sessions = sessions;
    this.delegate = delegate;
  }

  /**
   * Builds the store on the application's data source and transaction manager, which must manage
   * that data source ({@code DataSourceTransactionManager}, {@code JdbcTransactionManager}, or
   * {@code JpaTransactionManager} with the data source set, as Spring Boot sets it).
   *
   * @param customizer adjusts store-jdbc's builder (table name, claim lock timeout, {@code
   *     createTableIfMissing}, {@code verifyTable}) before it is built
   * @throws IllegalStateException as {@link MyBatisProcessedEventStore.Builder#build()}: the
   *     table is missing or misshapen, the probe claim failed
   * @throws StoreUnavailableException when the database could not be reached at start-up
   */
  public static SpringTransactionStore create(
      DataSource dataSource, PlatformTransactionManager transactionManager,
      java.util.function.Consumer<MyBatisProcessedEventStore.Builder> customizer) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(transactionManager, "transactionManager");
    Configuration configuration = new Configuration(
        new Environment("idem", new SpringBoundTransactionFactory(), dataSource));
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(configuration);
    MyBatisProcessedEventStore.Builder builder = MyBatisProcessedEventStore.builder(sessions);
    customizer.accept(builder);
    TransactionTemplate template = new TransactionTemplate(transactionManager);
    template.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRED);
    return new SpringTransactionStore(dataSource, template, sessions, builder.build());
  }

  /**
   * The MyBatis factory whose sessions work on the connection of the Spring transaction open on the
   * thread (outside one: a transaction of their own); for {@link IdemOutbox}.
   */
  SqlSessionFactory sessions() {
    return sessions;
  }

  /** The data source the store runs on. */
  DataSource dataSource() {
    return dataSource;
  }

  /** The store-jdbc store the claim is delegated to; for {@code RetentionJob}. */
  public MyBatisProcessedEventStore delegate() {
    return delegate;
  }

  /**
   * Runs {@code work} in a new transaction of the application's transaction manager: committed by
   * it when {@code work} returns, rolled back when it throws; failures classified as the class
   * documentation says.
   *
   * @throws IllegalStateException when the thread already runs inside a Spring transaction
   *     (nothing claimed), or when the connection is in auto-commit mode
   * @throws StoreUnavailableException no transaction could begin, or the connection broke and a
   *     fresh one fails too
   * @throws TransactionRetryException the database asked for a retry (PostgreSQL's 40001, 40P01;
   *     MariaDB's 1213, 1205) or the claim's lock wait ran out
   * @throws Exception whatever else the work or the commit threw, unchanged
   */
  @Override
  public <T> T inTransaction(TransactionWork<SqlSession, T> work) throws Exception {
    if (TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException(OUTER_TRANSACTION_REFUSED);
    }
    try {
      return transactions.execute(status -> {
        SqlSession session = sessions.openSession(ExecutorType.SIMPLE, false);
        try {
          if (session.getConnection().getAutoCommit()) {
            throw new IllegalStateException("the transaction manager left the connection in"
                + " auto-commit mode, so the marker would commit on its own; does it manage the"
                + " application's DataSource? Nothing was claimed");
          }
          return work.run(session);
        } catch (RuntimeException | Error e) {
          throw e;
        } catch (Exception e) {
          throw new CheckedWorkFailure(e);
        } finally {
          session.close();
        }
      });
    } catch (CheckedWorkFailure wrapped) {
      throw classify(wrapped.getCause());
    } catch (CannotCreateTransactionException e) {
      throw new StoreUnavailableException(
          "could not begin a transaction: " + rootMessage(e), e);
    } catch (RuntimeException e) {
      throw classify(e);
    }
  }

  /** Failure classification of the rules above; returns the exception to throw. */
  private Exception classify(Exception failure) {
    if (failure instanceof StoreUnavailableException
        || failure instanceof TransactionRetryException) {
      return failure;
    }
    Dialect dialect = delegate.dialect();
    String retry = dialect.retryRequestIn(failure);
    if (retry != null) {
      return new TransactionRetryException(dialect.displayName().split(" ")[0]
          + " asked for the transaction to be retried (" + retry + "): " + rootMessage(failure), failure);
    }
    SQLException sql = sqlCause(failure);
    String state = sql == null ? null : sql.getSQLState();
    if (state != null && state.startsWith("08") && !freshConnectionWorks()) {
      return new StoreUnavailableException(
          "the transaction's connection broke and a fresh one fails too: " + rootMessage(failure),
          failure);
    }
    return failure;
  }

  private boolean freshConnectionWorks() {
    try (Connection connection = dataSource.getConnection()) {
      return connection.isValid(5);
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  private static @Nullable SQLException sqlCause(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        return sql;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private static String rootMessage(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return String.valueOf(root.getMessage());
  }

  @Override
  public ClaimResult claim(SqlSession transaction, IdempotencyKey key, byte[] payloadFingerprint) {
    return delegate.claim(transaction, key, payloadFingerprint);
  }

  @Override
  public List<ClaimResult> claimAll(
      SqlSession transaction, List<IdempotencyKey> keys, List<byte[]> payloadFingerprints) {
    return delegate.claimAll(transaction, keys, payloadFingerprints);
  }

  @Override
  public void confirmClaim(SqlSession transaction, IdempotencyKey key) {
    delegate.confirmClaim(transaction, key);
  }

  @Override
  public void confirmClaims(SqlSession transaction, List<IdempotencyKey> keys) {
    delegate.confirmClaims(transaction, keys);
  }

  @Override
  public boolean confirmsWithoutMarkers() {
    return delegate.confirmsWithoutMarkers();
  }

  /**
   * The attempt count, in store-jdbc's own short transaction outside any Spring transaction
   * (docs/FAILURES.md, "Attempts that survive the process"): committed before the handler runs.
   */
  @Override
  public int startAttempt(IdempotencyKey key) {
    return delegate.startAttempt(key);
  }

  /** Removes the attempt count in the message's transaction, on the Spring-bound connection. */
  @Override
  public void clearAttempts(SqlSession transaction, IdempotencyKey key) {
    delegate.clearAttempts(transaction, key);
  }

  @Override
  public int purge(Instant processedBefore, int maxRows) {
    return delegate.purge(processedBefore, maxRows);
  }

  @Override
  public boolean isProcessed(IdempotencyKey key) {
    return delegate.isProcessed(key);
  }

  /** The dead-letter decision, in store-jdbc's own short transaction, outside any Spring transaction. */
  @Override
  public boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
    return delegate.recordDeadLetter(key, decision);
  }

  @Override
  public @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
    return delegate.deadLetterDecision(key);
  }

  @Override
  public boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
    return delegate.releaseDeadLetter(key, brokerMessageId);
  }

  @Override
  public String toString() {
    return "SpringTransactionStore[" + delegate + "]";
  }

  /** Carries a checked exception of the work through {@link TransactionTemplate} (rolled back). */
  private static final class CheckedWorkFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CheckedWorkFailure(Exception cause) {
      super(cause);
    }

    @Override
    public synchronized Exception getCause() {
      return (Exception) super.getCause();
    }
  }
}
