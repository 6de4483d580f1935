package io.idem.store.jdbc;

import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * A database the processed-events store runs on. The SQL of each lives in the store's mappers,
 * selected the MyBatis way: statements marked {@code databaseId="postgresql"} or {@code
 * databaseId="mariadb"} beside the ones every database shares ({@link #databaseId()}); what SQL
 * alone cannot say — which errors ask for the transaction to be retried, how the claim's lock wait
 * is bounded, where the schema scripts are — is here. The differences, and what is verified on
 * which server, are tabled in docs/STORE.md ("Databases").
 *
 * <p>{@link MyBatisProcessedEventStore.Builder#build()} reads the database from the JDBC metadata
 * of one connection ({@link DatabaseMetaData#getDatabaseProductName()}) unless {@link
 * MyBatisProcessedEventStore.Builder#dialect(Dialect)} names it; any other database is refused
 * there, naming it and these. Immutable and thread-safe.
 */
public enum Dialect {
  /**
   * PostgreSQL 12+ on pgjdbc: {@code INSERT … ON CONFLICT DO NOTHING} claims, {@code lock_timeout}
   * set transaction-locally by the claim, the claiming transaction checked with {@code
   * txid_current_if_assigned()} at COMMIT.
   */
  POSTGRESQL("postgresql", "PostgreSQL 12+", "db/migration/idem"),

  /**
   * MariaDB 10.6+ (InnoDB, utf8mb4, strict {@code sql_mode}) on any JDBC driver: a plain {@code
   * INSERT} claims, a duplicate-key error (1062) followed by a locking read tells a duplicate from a
   * conflict, a batch is claimed by one {@code INSERT IGNORE … RETURNING} whose warnings must all be
   * 1062, {@code SET STATEMENT innodb_lock_wait_timeout = n FOR …} bounds the claim's lock wait, the
   * marker is re-read in the transaction before COMMIT. Schema scripts in {@code
   * db/migration/idem-mariadb}.
   */
  MARIADB("mariadb", "MariaDB 10.6+", "db/migration/idem-mariadb");

  /** MariaDB's error code of a deadlock, after which InnoDB has rolled the whole transaction back. */
  static final int ER_LOCK_DEADLOCK = 1213;
  /** MariaDB's error code of a lock wait longer than {@code innodb_lock_wait_timeout}. */
  static final int ER_LOCK_WAIT_TIMEOUT = 1205;
  /** MariaDB's error code of a duplicate key in a unique index. */
  static final int ER_DUP_ENTRY = 1062;
  /** MariaDB's error code of a statement that ran out of {@code max_statement_time}. */
  static final int ER_STATEMENT_TIMEOUT = 1969;
  /**
   * The largest {@code innodb_lock_wait_timeout} MariaDB takes, in seconds (about 3 years: 10.11's
   * maximum; a larger value is cut to it with warning 1292, which the batch claim's guard would
   * refuse): what {@link Duration#ZERO} ("no bound") becomes there (MariaDB's own 0 means "do not
   * wait").
   */
  static final long MARIADB_MAX_LOCK_WAIT_SECONDS = 100_000_000L;

  private final String databaseId;
  private final String displayName;
  private final String migrations;

  Dialect(String databaseId, String displayName, String migrations) {
    this.databaseId = databaseId;
    this.displayName = displayName;
    this.migrations = migrations;
  }

  /** The {@code databaseId} of this database's statements in the store's mappers: {@code postgresql}, {@code mariadb}. */
  public String databaseId() {
    return databaseId;
  }

  /**
   * The classpath folder of this database's schema scripts ({@code V1__processed_events.sql},
   * {@code V3__…}, {@code V4__…}): a Flyway location of its own.
   */
  public String migrations() {
    return migrations;
  }

  /** The database and the oldest version supported, for messages: {@code MariaDB 10.6+}. */
  public String displayName() {
    return displayName;
  }

  /** The supported databases, for messages: {@code PostgreSQL 12+, MariaDB 10.6+}. */
  static String supported() {
    return Arrays.stream(values()).map(Dialect::displayName).collect(Collectors.joining(", "));
  }

  /**
   * The dialect of the database behind {@code metadata}, from its product name (and, for MySQL
   * Connector/J on a MariaDB server, its version string).
   *
   * @throws IllegalStateException for any other database (MySQL included: not verified yet), or a
   *     MariaDB older than 10.6, naming it and the supported ones
   * @throws SQLException when the metadata cannot be read
   */
  public static Dialect of(DatabaseMetaData metadata) throws SQLException {
    String product = String.valueOf(metadata.getDatabaseProductName());
    String version = String.valueOf(metadata.getDatabaseProductVersion());
    Dialect dialect = byName(product, version);
    if (dialect == null) {
      throw new IllegalStateException("the SqlSessionFactory's database is " + product + " " + version
          + ", which the processed-events store does not support; it supports " + supported()
          + " (docs/STORE.md, \"Databases\")");
    }
    if (dialect == MARIADB) {
      int major = metadata.getDatabaseMajorVersion();
      int minor = metadata.getDatabaseMinorVersion();
      // MariaDB before 11 announces itself as "5.5.5-10.11.6-MariaDB" to MySQL clients (a
      // replication-compatibility prefix), which MySQL Connector/J reports as version 5.5
      java.util.regex.Matcher real = java.util.regex.Pattern.compile("^5\\.5\\.5-(\\d+)\\.(\\d+)")
          .matcher(version);
      if (real.find()) {
        major = Integer.parseInt(real.group(1));
        minor = Integer.parseInt(real.group(2));
      }
      if (major < 10 || (major == 10 && minor < 6)) {
        throw new IllegalStateException("the SqlSessionFactory's database is MariaDB " + version
            + ", older than the store supports (" + supported() + "): it needs 10.6 for FOR UPDATE"
            + " SKIP LOCKED and 10.5 for INSERT … RETURNING");
      }
    }
    return dialect;
  }

  private static @Nullable Dialect byName(String product, String version) {
    String name = product.toLowerCase(Locale.ROOT);
    if (name.equals("postgresql")) {
      return POSTGRESQL;
    }
    if (name.equals("mariadb")
        || (name.equals("mysql") && version.toLowerCase(Locale.ROOT).contains("mariadb"))) {
      return MARIADB;
    }
    return null;
  }

  /**
   * {@link MyBatisProcessedEventStore.Builder#claimLockTimeout} in this database's terms:
   * PostgreSQL's {@code lock_timeout} text ({@code 2000ms}, {@code 0} for no bound); MariaDB's
   * {@code innodb_lock_wait_timeout}, whole seconds rounded up (at least 1; {@link Duration#ZERO}
   * the largest it takes).
   */
  String lockTimeout(Duration claimLockTimeout) {
    if (this == POSTGRESQL) {
      return claimLockTimeout.isZero() ? "0" : Math.max(1, claimLockTimeout.toMillis()) + "ms";
    }
    return Long.toString(lockWaitSeconds(claimLockTimeout));
  }

  /** MariaDB's {@code innodb_lock_wait_timeout} for {@code claimLockTimeout} (see {@link #lockTimeout}). */
  static long lockWaitSeconds(Duration claimLockTimeout) {
    if (claimLockTimeout.isZero()) {
      return MARIADB_MAX_LOCK_WAIT_SECONDS;
    }
    long millis = claimLockTimeout.toMillis();
    return Math.min(MARIADB_MAX_LOCK_WAIT_SECONDS, Math.max(1, (millis + 999) / 1000));
  }

  /**
   * Whether {@code e} is the database asking for the whole transaction to be retried: PostgreSQL's
   * 40001 (serialization failure) and 40P01 (deadlock); MariaDB's 1213 (deadlock: InnoDB rolled
   * the transaction back) and 1205 (a lock wait past {@code innodb_lock_wait_timeout}), or SQLSTATE
   * 40001.
   */
  boolean asksForRetry(SQLException e) {
    String state = e.getSQLState();
    if (this == POSTGRESQL) {
      return state != null && TransientFailures.RETRY_TRANSACTION.contains(state);
    }
    return e.getErrorCode() == ER_LOCK_DEADLOCK || e.getErrorCode() == ER_LOCK_WAIT_TIMEOUT
        || "40001".equals(state);
  }

  /**
   * Whether {@code e}, raised by a claim (or another statement of the store bounded by the claim
   * lock timeout), says its lock wait was cut short: PostgreSQL's 55P03 ({@code lock_timeout}) and
   * 57014 (a shorter {@code statement_timeout}); MariaDB's 1205 and 1969 ({@code
   * max_statement_time}).
   */
  boolean lockWaitRanOut(SQLException e) {
    if (this == POSTGRESQL) {
      return "55P03".equals(e.getSQLState()) || ClaimStatement.QUERY_CANCELED.equals(e.getSQLState());
    }
    return e.getErrorCode() == ER_LOCK_WAIT_TIMEOUT || e.getErrorCode() == ER_STATEMENT_TIMEOUT;
  }

  /**
   * Whether {@code failure} (its cause chain, next exceptions included) holds this database asking
   * for the whole transaction to be retried — PostgreSQL's 40001 or 40P01; MariaDB's 1213, 1205 or
   * SQLSTATE 40001 — for stores that classify failures of their own transactions (the Spring Boot
   * starter's, whose transactions Spring commits).
   *
   * @return how the error is named in messages ({@code SQLSTATE 40001}, {@code MariaDB error 1205,
   *     SQLSTATE HY000}), or {@code null} when it holds none
   */
  public @Nullable String retryRequestIn(Throwable failure) {
    SQLException e = find(failure, this::asksForRetry);
    return e == null ? null : describe(e);
  }

  /** The first SQLException in {@code failure}'s cause chain for which {@code test} holds, or {@code null}. */
  static @Nullable SQLException find(Throwable failure, java.util.function.Predicate<SQLException> test) {
    java.util.Map<Throwable, Boolean> seen = new java.util.IdentityHashMap<>();
    for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
      if (t instanceof SQLException sql) {
        for (SQLException e = sql; e != null; e = e.getNextException()) {
          if (test.test(e)) {
            return e;
          }
          if (e.getNextException() == e) {
            break;
          }
        }
      }
    }
    return null;
  }

  /** How an error is named in messages: {@code SQLSTATE 40001} or {@code MariaDB error 1213}. */
  String describe(SQLException e) {
    return this == POSTGRESQL ? "SQLSTATE " + e.getSQLState()
        : "MariaDB error " + e.getErrorCode() + ", SQLSTATE " + e.getSQLState();
  }
}
