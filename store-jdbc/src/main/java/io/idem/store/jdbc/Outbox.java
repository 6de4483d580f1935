package io.idem.store.jdbc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.TraceContext;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.ibatis.exceptions.PersistenceException;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * The transactional outbox's table: a handler records a side effect it must cause (a message to
 * another broker or topic, a payment API call, an email) as a row written in its own transaction,
 * beside the processed-events marker, and an {@link OutboxRelay} publishes it after the commit.
 * The row commits exactly when the handler's work commits: rolled back with it, never sent for
 * work that did not happen, never lost for work that did. See {@code docs/OUTBOX.md}.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.ofDefaults();
 * IdempotentConsumer.builder(store).keyedHandler((key, message, session) -> {
 *   session.getMapper(Payments.class).record(message.payload());
 *   outbox.enqueue(session, key, "receipts", receiptOf(message), Map.of());
 * })
 * }</pre>
 *
 * <p>Immutable and thread-safe; its statements are registered in the session's MyBatis {@code
 * Configuration} on first use, those of the session's database (PostgreSQL or MariaDB, read from
 * its connection: see docs/OUTBOX.md, "MariaDB").
 */
public final class Outbox {
  /** The default table, {@value}. */
  public static final String DEFAULT_TABLE = "idem_outbox";

  /** The schema script on this jar's class path, {@value}. */
  public static final String MIGRATION_RESOURCE = "db/migration/idem/V2__outbox.sql";

  /**
   * The relay's lease column and the claim's index, applied after {@link #MIGRATION_RESOURCE}
   * (PostgreSQL; idempotent): {@value}.
   */
  public static final String LEASE_MIGRATION_RESOURCE = "db/migration/idem/V5__outbox_lease.sql";

  /**
   * The trace-context column {@code traceparent} (after {@link #LEASE_MIGRATION_RESOURCE}); applied
   * by {@link #createTableIfMissing} too.
   */
  public static final String TRACEPARENT_MIGRATION_RESOURCE =
      "db/migration/idem/V8__outbox_traceparent.sql";

  /**
   * PostgreSQL: the lease's end in a column of its own, {@code leased_until}, in no index, and the
   * table's {@code fillfactor} 50, so that a claim's lease is a HOT update (after {@link
   * #TRACEPARENT_MIGRATION_RESOURCE}); applied by {@link #createTableIfMissing} too: {@value}.
   * The PostgreSQL relay's claim reads the column. MariaDB keeps its lease in {@code
   * next_attempt_at} (no HOT updates in InnoDB) and has no V10.
   */
  public static final String LEASE_UNTIL_MIGRATION_RESOURCE = "db/migration/idem/V10__outbox_lease_until.sql";

  /**
   * MariaDB's outbox scripts, in {@code db/migration/idem-mariadb} (the same versions as
   * PostgreSQL's, applied in this order by {@link #createTableIfMissing} on MariaDB).
   */
  static final List<String> MARIADB_MIGRATION_RESOURCES = List.of(
      "db/migration/idem-mariadb/V2__outbox.sql", "db/migration/idem-mariadb/V5__outbox_lease.sql",
      "db/migration/idem-mariadb/V8__outbox_traceparent.sql");

  /** Longest destination, in characters (the {@code varchar(255)} column). */
  public static final int MAX_DESTINATION_LENGTH = 255;

  /** Longest ordering key, in characters (the {@code varchar(255)} column). */
  public static final int MAX_ORDERING_KEY_LENGTH = 255;

  static final String TEMPLATE = "io/idem/store/jdbc/OutboxMapper.xml";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final TableName table;

  private Outbox(TableName table) {
    this.table = table;
  }

  /** The outbox in {@value #DEFAULT_TABLE}. */
  public static Outbox ofDefaults() {
    return new Outbox(TableName.of(DEFAULT_TABLE));
  }

  /**
   * The outbox in {@code tableName}.
   *
   * @param tableName {@code table} or {@code schema.table}
   * @throws IllegalArgumentException when it is not a plain identifier
   */
  public static Outbox of(String tableName) {
    return new Outbox(TableName.of(Objects.requireNonNull(tableName, "tableName")));
  }

  /** The table, lower-cased as PostgreSQL folds it. */
  public String tableName() {
    return table.qualified();
  }

  /**
   * Writes an unordered row in {@code session}'s transaction (the handler's), keyed by {@code
   * key.value()}.
   *
   * @return {@code true} when written; {@code false} when a row for this destination and key is
   *     already there (enqueueing is idempotent)
   * @throws IllegalArgumentException when an argument breaks a rule of {@link OutboxEntry}
   * @throws org.apache.ibatis.exceptions.PersistenceException when the database refused the
   *     insert (a missing table: create it with {@link #createTableIfMissing}); inside a handler
   *     that is the handler's failure, and the whole transaction rolls back
   */
  public boolean enqueue(
      SqlSession session, IdempotencyKey key, String destination, byte[] payload,
      Map<String, String> headers) {
    Objects.requireNonNull(key, "key");
    return enqueue(session, new OutboxEntry(key.value(), destination, null, payload, headers));
  }

  /**
   * Writes {@code entry} in {@code session}'s transaction.
   *
   * @return {@code true} when written; {@code false} when a row for its destination and key is
   *     already there
   * @throws org.apache.ibatis.exceptions.PersistenceException when the database refused it
   */
  public boolean enqueue(SqlSession session, OutboxEntry entry) {
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(entry, "entry");
    Map<String, Object> params = new HashMap<>();
    params.put("key", entry.idempotencyKey());
    params.put("destination", entry.destination());
    params.put("orderingKey", entry.orderingKey());
    params.put("payload", entry.payload());
    params.put("headers", toJson(entry.headers()));
    // the handler's trace context, when it runs in an Idem pipeline and has one (V8's column)
    params.put("traceparent", entry.headers().containsKey(TraceContext.TRACEPARENT) ? null
        : TraceContext.forOutbox(entry.idempotencyKey(), entry.destination()));
    String namespace = namespace(session);
    try {
      return session.insert(namespace + ".enqueue", params) == 1;
    } catch (PersistenceException e) {
      if (isDuplicateRow(e)) {
        return false; // MariaDB: 1062 on (destination, idempotency_key), the statement alone rolled back
      }
      throw e;
    }
  }

  /**
   * MariaDB's error 1062 on the outbox's unique key (destination, idempotency_key), not on the
   * primary key: the row is there already. InnoDB rolls back only the failed statement, so the
   * handler's transaction goes on. (PostgreSQL's enqueue never fails so: ON CONFLICT DO NOTHING.)
   */
  private static boolean isDuplicateRow(Throwable e) {
    java.sql.SQLException dup = Dialect.find(e, x -> x.getErrorCode() == Dialect.ER_DUP_ENTRY);
    return dup != null && dup.getMessage() != null && !dup.getMessage().contains("'PRIMARY'");
  }

  /**
   * Gives a parked row back to the relay, its attempts counted from zero again, in {@code
   * session}'s transaction (commit it yourself).
   *
   * @return whether a parked, unsent row {@code id} was there
   */
  public boolean unpark(SqlSession session, long id) {
    return session.update(namespace(session) + ".unpark", Map.of("id", id)) == 1;
  }

  /**
   * Deletes at most {@code maxRows} rows sent before {@code before}, in {@code session}'s
   * transaction (commit it yourself; call again while it returns {@code maxRows}).
   *
   * @return the rows deleted
   * @throws IllegalArgumentException when {@code maxRows < 1}
   */
  public int purgeSent(SqlSession session, Instant before, int maxRows) {
    if (maxRows < 1) {
      throw new IllegalArgumentException("maxRows must be >= 1, but was " + maxRows);
    }
    return session.delete(namespace(session) + ".purgeSent",
        Map.of("before", OffsetDateTime.ofInstant(before, ZoneOffset.UTC),
            "beforeUtc", java.time.LocalDateTime.ofInstant(before, ZoneOffset.UTC), "maxRows", maxRows));
  }

  /**
   * Creates the outbox table {@code tableName} and its indexes when missing ({@link
   * #MIGRATION_RESOURCE}, {@link #LEASE_MIGRATION_RESOURCE}, {@link
   * #TRACEPARENT_MIGRATION_RESOURCE} then {@link #LEASE_UNTIL_MIGRATION_RESOURCE}, idempotent, under the same advisory lock as the processed-events
   * script; on MariaDB the same versions from {@code db/migration/idem-mariadb}, statement by
   * statement under the named lock {@code idem_schema}: the database is read from the connection).
   *
   * @throws IllegalArgumentException when the name is not a plain identifier
   * @throws StoreUnavailableException when the database could not be reached or asked for a retry
   * @throws IllegalStateException for any other failure (a missing schema or privilege)
   */
  public static void createTableIfMissing(DataSource dataSource, String tableName) {
    TableName table = TableName.of(tableName);
    try (Connection c = dataSource.getConnection()) {
      runScript(c, table, Dialect.of(c.getMetaData()));
    } catch (SQLException | RuntimeException e) {
      throw StartupChecks.failure("could not create " + table.qualified(), e);
    }
  }

  static void createTableIfMissing(SqlSessionFactory sessions, TableName table) {
    try (SqlSession session = sessions.openSession(false)) {
      Connection c = session.getConnection();
      runScript(c, table, Dialect.of(c.getMetaData()));
    } catch (SQLException | RuntimeException e) {
      throw StartupChecks.failure("could not create " + table.qualified(), e);
    }
  }

  /**
   * PostgreSQL: the scripts in one transaction under the schema's advisory lock; MariaDB: statement
   * by statement (each DDL commits on its own) under the named lock {@code idem_schema}.
   */
  private static void runScript(Connection c, TableName table, Dialect dialect) throws SQLException {
    if (dialect == Dialect.MARIADB) {
      ProcessedEventsSchema.runMariaDbScript(c, script(table, dialect));
    } else {
      ProcessedEventsSchema.runScript(c, script(table));
    }
  }

  static String script(TableName table) {
    return script(table, Dialect.POSTGRESQL);
  }

  /**
   * {@code dialect}'s scripts with the index names, then the table (a whole word only), made
   * {@code table}'s: in the other order a table named {@code idem_outbox_2} would be renamed twice.
   */
  static String script(TableName table, Dialect dialect) {
    String sql = dialect == Dialect.MARIADB
        ? String.join(";\n", MARIADB_MIGRATION_RESOURCES.stream().map(ProcessedEventsMapper::readResource).toList())
        : ProcessedEventsMapper.readResource(MIGRATION_RESOURCE) + "\n"
            + ProcessedEventsMapper.readResource(LEASE_MIGRATION_RESOURCE) + "\n"
            + ProcessedEventsMapper.readResource(TRACEPARENT_MIGRATION_RESOURCE) + "\n"
            + ProcessedEventsMapper.readResource(LEASE_UNTIL_MIGRATION_RESOURCE);
    for (String index : new String[] {"_unordered_due_idx", "_due_idx", "_ordering_idx", "_destination_key_uq"}) {
      sql = sql.replace(DEFAULT_TABLE + index, table.unqualified() + index);
    }
    return Pattern.compile("\\b" + DEFAULT_TABLE + "\\b(?!_)").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(table.qualified()));
  }

  TableName table() {
    return table;
  }

  private static final String NAMESPACE_PREFIX = "io.idem.store.jdbc.Outbox.";

  /**
   * The namespace of this table's statements in the session's {@code Configuration}, registered
   * on first use with the statements of the session's database ({@link Dialect}, read from its
   * connection's metadata once per Configuration and table).
   */
  String namespace(SqlSession session) {
    Configuration configuration = session.getConfiguration();
    String namespace = NAMESPACE_PREFIX + table.qualified();
    if (configuration.hasStatement(namespace + ".claim", false)) {
      return namespace;
    }
    return ProcessedEventsMapper.register(
        configuration, TEMPLATE, NAMESPACE_PREFIX, table, "claim", dialect(session));
  }

  /** The database of {@code session}'s connection. */
  static Dialect dialect(SqlSession session) {
    try {
      return Dialect.of(session.getConnection().getMetaData());
    } catch (SQLException e) {
      throw new PersistenceException("could not read the outbox's database from the connection: " + e, e);
    }
  }

  private static String toJson(Map<String, String> headers) {
    try {
      return JSON.writeValueAsString(headers);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("headers cannot be written as JSON: " + e.getMessage(), e);
    }
  }

  @SuppressWarnings("unchecked")
  static Map<String, String> headersFromJson(String json) {
    try {
      return JSON.readValue(json, Map.class);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("an outbox row's headers are not a JSON object: " + json, e);
    }
  }
}
