package io.idem.store.jdbc;

import static io.idem.store.jdbc.MyBatisProcessedEventStore.MIGRATION_RESOURCE;

import io.idem.StoreUnavailableException;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * What {@link MyBatisProcessedEventStore.Builder#build()} checks, in one session opened the way
 * the store opens its transactions: that the session gives Idem a transaction of its own (not in
 * auto-commit mode, and its commit really commits), and that the table is there and shaped like
 * {@link MyBatisProcessedEventStore#MIGRATION_RESOURCE}. A misconfiguration is an {@link
 * IllegalStateException} (an unusable table name an {@link IllegalArgumentException}) naming what
 * is wrong; only a database that cannot be reached is a {@link StoreUnavailableException}.
 */
final class StartupChecks {
  /** The columns of {@link MyBatisProcessedEventStore#MIGRATION_RESOURCE}. */
  static final List<String> COLUMNS =
      List.of("consumer_group", "idempotency_key", "key_source", "payload_sha256", "processed_at");

  /** Why a session in auto-commit mode is refused, and what to do; at build and per transaction. */
  static final String AUTO_COMMIT_REFUSED = "the SqlSessionFactory's connections are in auto-commit"
      + " mode, so the processed-events marker would commit on its own before the handler ran, and a"
      + " message whose handler failed would be skipped as a duplicate when redelivered, its effect"
      + " never applied. Build the factory's Environment with MyBatis' JdbcTransactionFactory (it"
      + " turns auto-commit off in each session), or, with mybatis-spring's"
      + " SpringManagedTransactionFactory, give the pool autoCommit=false";

  static final String COMMIT_IGNORED = "commit on a session of the SqlSessionFactory does not end"
      + " its transaction (MyBatis' ManagedTransactionFactory ignores commit and rollback, and so does"
      + " a Spring-managed transaction already open), so the pool would roll the processed-events"
      + " marker and the handler's writes back after the message was acknowledged. Build the"
      + " factory's Environment with MyBatis' JdbcTransactionFactory";

  private StartupChecks() {}

  /** Runs every check in {@code session}; the caller rolls it back and closes it. */
  static void run(SqlSession session, String namespace, TableName table) {
    requireOwnTransaction(session, namespace);
    requireTable(session, namespace, table);
  }

  private static void requireOwnTransaction(SqlSession session, String namespace) {
    boolean autoCommit;
    try {
      autoCommit = session.getConnection().getAutoCommit();
    } catch (SQLException | RuntimeException e) {
      throw failure("could not open a database session to check it", e);
    }
    if (autoCommit) {
      throw new IllegalStateException(AUTO_COMMIT_REFUSED);
    }
    String mark = query(() -> {
      session.selectOne(namespace + ".markTransaction");
      session.commit(true);
      return session.selectOne(namespace + ".transactionMark");
    }, "could not check that commit ends a transaction");
    if ("open".equals(mark)) {
      throw new IllegalStateException(COMMIT_IGNORED);
    }
  }

  private static void requireTable(SqlSession session, String namespace, TableName table) {
    Map<String, Object> name = Map.of("table", table.qualified());
    String what = "could not verify processed-events table " + table.qualified();
    List<String> columns = query(() -> session.selectList(namespace + ".columns", name), what);
    if (columns.isEmpty()) {
      probe(session, namespace, table); // says why: missing, unusable name, no privilege, …
      throw missing(table, null);
    }
    List<String> missing = COLUMNS.stream().filter(c -> !columns.contains(c)).toList();
    if (!missing.isEmpty()) {
      throw new IllegalStateException("table " + table.qualified() + " exists but is not an Idem"
          + " processed-events table: it has no column " + String.join(", ", missing) + "; create it"
          + " with " + MIGRATION_RESOURCE);
    }
    Boolean keyed = query(() -> session.selectOne(namespace + ".conflictKey", name), what);
    if (!Boolean.TRUE.equals(keyed)) {
      throw new IllegalStateException("table " + table.qualified() + " has no PRIMARY KEY or UNIQUE"
          + " constraint on exactly (consumer_group, idempotency_key) (not deferrable, not partial),"
          + " so the claim's ON CONFLICT could not detect a duplicate; create the table with "
          + MIGRATION_RESOURCE);
    }
    probe(session, namespace, table); // the store's own statement: privileges, name usable
  }

  /** Reads the table through the store's own statement, and says what its failure means. */
  private static void probe(SqlSession session, String namespace, TableName table) {
    try {
      session.selectOne(namespace + ".exists", Map.of("consumerGroup", "idem-verify", "key", "idem-verify"));
    } catch (RuntimeException e) {
      String state = TransientFailures.sqlState(e);
      String qualified = table.qualified();
      if ("42P01".equals(state) || "3F000".equals(state)) {
        throw missing(table, e);
      }
      if ("42601".equals(state)) {
        throw new IllegalArgumentException("tableName '" + qualified + "' cannot be used as an unquoted"
            + " identifier (a reserved word?): " + TransientFailures.rootMessage(e), e);
      }
      if ("42703".equals(state)) {
        throw new IllegalStateException("table " + qualified + " exists but is not an Idem processed-events"
            + " table (" + TransientFailures.rootMessage(e) + "); see " + MIGRATION_RESOURCE, e);
      }
      if ("42501".equals(state)) {
        throw new IllegalStateException("no privilege on processed-events table " + qualified + ": "
            + TransientFailures.rootMessage(e), e);
      }
      throw failure("could not verify processed-events table " + qualified, e);
    }
  }

  private static IllegalStateException missing(TableName table, @Nullable Throwable cause) {
    return new IllegalStateException("processed-events table " + table.qualified() + " does not exist:"
        + " apply " + MIGRATION_RESOURCE + " with your migration tool, or build the store with"
        + " createTableIfMissing(true)", cause);
  }

  private static <T> T query(Supplier<T> query, String what) {
    try {
      return query.get();
    } catch (RuntimeException e) {
      throw failure(what, e);
    }
  }

  /** An outage (retry later) or a configuration error (fix it), told apart by the SQLSTATE. */
  static RuntimeException failure(String what, Throwable e) {
    String message = what + ": " + TransientFailures.rootMessage(e);
    return TransientFailures.isTransient(e)
        ? new StoreUnavailableException(message, e)
        : new IllegalStateException(message, e);
  }
}
