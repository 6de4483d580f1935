package io.idem.store.jdbc;

import static io.idem.store.jdbc.MyBatisProcessedEventStore.MIGRATION_RESOURCE;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.apache.ibatis.transaction.managed.ManagedTransactionFactory;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What {@link MyBatisProcessedEventStore.Builder#build()} checks. Always, without the database:
 * that the session factory's {@code Environment} exists and does not use MyBatis' {@code
 * ManagedTransactionFactory} ({@link #requireTransactionFactory}). Unless {@code
 * verifyTable(false)}, in one session opened the way the store opens its transactions ({@link
 * #run}): that the session gives Idem a transaction of its own (not in auto-commit mode, and its
 * commit really commits), and that the table is there and shaped like {@link
 * MyBatisProcessedEventStore#MIGRATION_RESOURCE}; then {@link ClaimProbe} checks that it takes a
 * claim. A misconfiguration is an {@link IllegalStateException} (an unusable table name an {@link
 * IllegalArgumentException}) naming what is wrong; only a database that cannot be reached or asks
 * for a retry is a {@link StoreUnavailableException}.
 */
final class StartupChecks {
  private static final Logger LOG = LoggerFactory.getLogger(MyBatisProcessedEventStore.class);

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
      + " its transaction (its TransactionFactory ignores commit, as mybatis-spring's does inside a"
      + " Spring transaction already open), so the processed-events marker and the handler's writes"
      + " would be committed or rolled back by someone else after the message was acknowledged."
      + " Build the factory's Environment with MyBatis' JdbcTransactionFactory";

  static final String MANAGED_REFUSED = "the SqlSessionFactory's Environment uses MyBatis'"
      + " ManagedTransactionFactory, whose commit and rollback do nothing, so Idem cannot own its"
      + " transactions: over a pool with autoCommit=false the pool or container would roll the"
      + " processed-events marker and the handler's writes back after the message was acknowledged,"
      + " and over a pool in auto-commit mode the marker would commit on its own before the handler"
      + " ran, and a message whose handler failed would be skipped as a duplicate when redelivered."
      + " Build the Environment with MyBatis' JdbcTransactionFactory; with mybatis-spring,"
      + " SpringManagedTransactionFactory works over a pool with autoCommit=false as long as the"
      + " store's transactions do not run inside a Spring transaction";

  static final String NO_ENVIRONMENT = "the SqlSessionFactory's Configuration has no Environment, so"
      + " it can open no session (and MyBatis would fall back to ManagedTransactionFactory, whose"
      + " commit does nothing). Build it with new Environment(id, new JdbcTransactionFactory(),"
      + " dataSource)";

  private StartupChecks() {}

  /**
   * Refuses a factory whose transactions Idem cannot own, without touching the database, so
   * whatever {@code verifyTable} says. Other factories are checked in a session by {@link #run}.
   *
   * @throws IllegalStateException without an Environment or with ManagedTransactionFactory
   */
  static void requireTransactionFactory(Configuration configuration) {
    Environment environment = configuration.getEnvironment();
    if (environment == null) {
      throw new IllegalStateException(NO_ENVIRONMENT);
    }
    if (environment.getTransactionFactory() instanceof ManagedTransactionFactory) {
      throw new IllegalStateException(MANAGED_REFUSED);
    }
  }

  /** The columns of {@link MyBatisProcessedEventStore#DEAD_LETTERS_MIGRATION_RESOURCE}. */
  static final List<String> DEAD_LETTER_COLUMNS = List.of("outcome", "dead_letter_cause",
      "dead_letter_detail", "dead_letter_exception", "broker_message_id");

  /**
   * Runs every database check in {@code session}; the caller rolls it back and closes it.
   *
   * @return whether the table has the dead-letter decision columns (all of them); without any, a
   *     WARN says how to add them; with only some, the table is refused
   */
  static boolean run(SqlSession session, String namespace, TableName table) {
    return run(session, namespace, table, Dialect.POSTGRESQL);
  }

  /**
   * {@link #run(SqlSession, String, TableName)} on {@code dialect}; on MariaDB also that the
   * session's {@code sql_mode} is strict and that the key columns compare exactly ({@link
   * #requireMariaDbRules}).
   */
  static boolean run(SqlSession session, String namespace, TableName table, Dialect dialect) {
    requireOwnTransaction(session, namespace);
    boolean deadLetters = requireTable(session, namespace, table, dialect);
    if (dialect == Dialect.MARIADB) {
      requireMariaDbRules(session, namespace, table);
    }
    return deadLetters;
  }

  /** The collations that compare a key as its bytes, trailing spaces included (NO PAD). */
  private static final Set<String> EXACT_COLLATIONS =
      Set.of("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "binary");

  /**
   * What MariaDB must hold for a claim to mean what it says: a strict {@code sql_mode}
   * (STRICT_TRANS_TABLES or STRICT_ALL_TABLES; otherwise a value too long for its column is
   * truncated with a warning, and two keys could become one), and key columns whose collation
   * compares them exactly ({@link #EXACT_COLLATIONS}: MariaDB's default utf8mb4 collations ignore
   * case, accents or trailing spaces, so "Order-1", "order-1" and "order-1 " would be one key).
   */
  private static void requireMariaDbRules(SqlSession session, String namespace, TableName table) {
    String mode = query(() -> session.selectOne(namespace + ".sqlMode"), "could not read sql_mode");
    if (mode == null || !(mode.contains("STRICT_TRANS_TABLES") || mode.contains("STRICT_ALL_TABLES"))) {
      throw new IllegalStateException("the sessions' sql_mode is '" + mode + "', without"
          + " STRICT_TRANS_TABLES: MariaDB would then truncate a value too long for its column with a"
          + " warning instead of refusing it, and nothing may be truncated silently; add"
          + " STRICT_TRANS_TABLES (MariaDB's default since 10.2.4) to the server's or the pool's"
          + " sql_mode (Connector/J: sessionVariables=sql_mode=…)");
    }
    List<Map<String, Object>> collations = query(
        () -> session.selectList(namespace + ".keyCollations", table.params()),
        "could not read the collations of " + table.qualified());
    for (Map<String, Object> row : collations) {
      Object column = row.get("column");
      int longest = "consumer_group".equals(column)
          ? IdempotencyKey.MAX_CONSUMER_GROUP_LENGTH : IdempotencyKey.MAX_LENGTH;
      Object maxChars = row.get("maxChars");
      if (maxChars instanceof Number n && n.longValue() < longest) {
        throw new IllegalStateException("processed-events table " + table.qualified() + ": " + column
            + " holds at most " + n + " characters, but " + (longest == IdempotencyKey.MAX_LENGTH
                ? "an idempotency key may have up to " : "a consumer group may have up to ")
            + longest + " (IdempotencyKey); a longer one would be refused at run time; create the"
            + " table with " + Dialect.MARIADB.migrations() + "/V1__processed_events.sql");
      }
      String collation = (String) row.get("collation");
      if (collation != null && !EXACT_COLLATIONS.contains(collation.toLowerCase(java.util.Locale.ROOT))) {
        throw new IllegalStateException("processed-events table " + table.qualified() + " compares "
            + row.get("column") + " with collation " + collation + ", which takes different keys for"
            + " one (case, accents or trailing spaces ignored); the key columns need utf8mb4_nopad_bin;"
            + " create the table with " + Dialect.MARIADB.migrations() + "/V1__processed_events.sql");
      }
    }
  }

  /**
   * Reads the isolation level the store's transactions run at, once, and logs it at INFO: with
   * {@code isolation(null)} (the default) it is the connection's own, which the store never sets
   * (no statement per transaction).
   *
   * @throws StoreUnavailableException or IllegalStateException as {@link #failure} decides
   */
  static void logIsolation(
      SqlSession session, String namespace, @Nullable TransactionIsolationLevel configured) {
    logIsolation(session, namespace, configured, Dialect.POSTGRESQL);
  }

  /** {@link #logIsolation(SqlSession, String, TransactionIsolationLevel)} on {@code dialect}. */
  static void logIsolation(SqlSession session, String namespace,
      @Nullable TransactionIsolationLevel configured, Dialect dialect) {
    String level = query(() -> session.selectOne(namespace + ".isolationLevel"),
        "could not read the sessions' isolation level");
    if (dialect == Dialect.MARIADB) {
      LOG.info("processed-events transactions run at isolation level {} ({}); a claim racing another"
          + " transaction on the same key waits for it (at most the claim lock timeout), then inserts"
          + " or reads the committed row with a locking read; a deadlock (1213) or lock wait timeout"
          + " (1205) retries the transaction (not counted)", level,
          configured == null ? "the connection's own: no statement sent per transaction"
              : "set by MyBatis on every session: one round trip per transaction");
      return;
    }
    LOG.info("processed-events transactions run at isolation level {} ({}); a claim racing another"
        + " transaction on the same key {}", level,
        configured == null ? "the connection's own: no statement sent per transaction"
            : "set by MyBatis on every session: one round trip per transaction",
        "read committed".equals(level)
            ? "waits for it, then reads the committed row"
            : "fails with 40001 and the transaction is retried (not counted)");
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

  private static boolean requireTable(
      SqlSession session, String namespace, TableName table, Dialect dialect) {
    String script = script(dialect, "V1__processed_events.sql");
    Map<String, Object> name = table.params();
    String what = "could not verify processed-events table " + table.qualified();
    List<String> columns = query(() -> session.selectList(namespace + ".columns", name), what);
    if (columns.isEmpty()) {
      probe(session, namespace, table, script); // says why: missing, unusable name, no privilege, …
      throw missing(table, null, script);
    }
    List<String> missing = COLUMNS.stream().filter(c -> !columns.contains(c)).toList();
    if (!missing.isEmpty()) {
      throw new IllegalStateException("table " + table.qualified() + " exists but is not an Idem"
          + " processed-events table: it has no column " + String.join(", ", missing) + "; create it"
          + " with " + script);
    }
    Boolean keyed = query(() -> session.selectOne(namespace + ".conflictKey", name), what);
    if (!Boolean.TRUE.equals(keyed)) {
      throw new IllegalStateException("table " + table.qualified() + " has no PRIMARY KEY or UNIQUE"
          + " constraint on exactly (consumer_group, idempotency_key) (not deferrable, not partial),"
          + " so the claim's ON CONFLICT could not detect a duplicate; create the table with "
          + script);
    }
    probe(session, namespace, table, script); // the store's own statement: privileges, name usable
    return deadLetterColumns(table, columns, script);
  }

  private static boolean deadLetterColumns(TableName table, List<String> columns, String script) {
    List<String> absent = DEAD_LETTER_COLUMNS.stream().filter(c -> !columns.contains(c)).toList();
    if (absent.isEmpty()) {
      return true;
    }
    if (absent.size() < DEAD_LETTER_COLUMNS.size()) {
      throw new IllegalStateException("table " + table.qualified() + " has only some of the"
          + " dead-letter decision columns (no " + String.join(", ", absent) + "); apply "
          + script.replace("V1__processed_events.sql", "V3__processed_events_dead_letters.sql"));
    }
    LOG.warn("processed-events table {} has no dead-letter decision columns, so a message"
        + " dead-lettered just before a crash may be processed again and dead-lettered twice; apply {}"
        + " (or build the store with createTableIfMissing(true))", table.qualified(),
        script.replace("V1__processed_events.sql", "V3__processed_events_dead_letters.sql"));
    return false;
  }

  /** Reads the table through the store's own statement, and says what its failure means. */
  private static void probe(SqlSession session, String namespace, TableName table, String script) {
    try {
      session.selectOne(namespace + ".exists", Map.of("consumerGroup", "idem-verify", "key", "idem-verify"));
    } catch (RuntimeException e) {
      String state = TransientFailures.sqlState(e);
      String qualified = table.qualified();
      SQLException sql = Dialect.find(e, x -> x.getErrorCode() != 0);
      int code = sql == null ? 0 : sql.getErrorCode(); // MariaDB's error code; pgjdbc's are 0
      if ("42P01".equals(state) || "3F000".equals(state) || code == 1146 || code == 1049) {
        throw missing(table, e, script);
      }
      if (code == 1064) {
        throw new IllegalArgumentException("tableName '" + qualified + "' cannot be used as an unquoted"
            + " identifier (a reserved word?): " + TransientFailures.rootMessage(e), e);
      }
      if (code == 1054) {
        throw new IllegalStateException("table " + qualified + " exists but is not an Idem processed-events"
            + " table (" + TransientFailures.rootMessage(e) + "); see " + script, e);
      }
      if (code == 1142 || code == 1044) {
        throw new IllegalStateException("no privilege on processed-events table " + qualified + ": "
            + TransientFailures.rootMessage(e), e);
      }
      if ("42601".equals(state)) {
        throw new IllegalArgumentException("tableName '" + qualified + "' cannot be used as an unquoted"
            + " identifier (a reserved word?): " + TransientFailures.rootMessage(e), e);
      }
      if ("42703".equals(state)) {
        throw new IllegalStateException("table " + qualified + " exists but is not an Idem processed-events"
            + " table (" + TransientFailures.rootMessage(e) + "); see " + script, e);
      }
      if ("42501".equals(state)) {
        throw new IllegalStateException("no privilege on processed-events table " + qualified + ": "
            + TransientFailures.rootMessage(e), e);
      }
      throw failure("could not verify processed-events table " + qualified, e);
    }
  }

  private static IllegalStateException missing(
      TableName table, @Nullable Throwable cause, String script) {
    return new IllegalStateException("processed-events table " + table.qualified() + " does not exist:"
        + " apply " + script + " with your migration tool, or build the store with"
        + " createTableIfMissing(true)", cause);
  }

  /** The classpath location of {@code dialect}'s script {@code file}. */
  static String script(Dialect dialect, String file) {
    return dialect.migrations() + "/" + file;
  }

  static <T> T query(Supplier<T> query, String what) {
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
