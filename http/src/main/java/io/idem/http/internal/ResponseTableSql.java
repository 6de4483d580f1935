package io.idem.http.internal;

import io.idem.store.jdbc.Dialect;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every SQL statement of the stored responses, in one place, per database (store-jdbc's {@link
 * Dialect}: PostgreSQL and MariaDB; plain SQL, so that a port to another database changes this
 * class and adds a migration): the UPDATE of the marker's response columns in the claiming
 * transaction ({@value #IN_MARKERS_MIGRATION_RESOURCE}), the read of a repeat (the marker's
 * columns, or the row of the table {@value #DEFAULT_TABLE} for responses stored before that
 * migration), the start-up probe, the lock-timeout reset before the handler (PostgreSQL), the
 * schema lock, and the migration scripts with the table names substituted. Immutable.
 */
public final class ResponseTableSql {
  /** The PostgreSQL migration next to store-jdbc's: {@value}. */
  public static final String MIGRATION_RESOURCE = "db/migration/idem/V6__http_responses.sql";
  /** The MariaDB migration next to store-jdbc's: {@value}. */
  public static final String MARIADB_MIGRATION_RESOURCE = "db/migration/idem-mariadb/V6__http_responses.sql";
  /** The PostgreSQL migration adding the response columns to the marker table: {@value}. */
  public static final String IN_MARKERS_MIGRATION_RESOURCE = "db/migration/idem/V9__http_responses_in_markers.sql";
  /** The MariaDB migration adding the response columns to the marker table: {@value}. */
  public static final String MARIADB_IN_MARKERS_MIGRATION_RESOURCE =
      "db/migration/idem-mariadb/V9__http_responses_in_markers.sql";
  /** MariaDB's named lock of store-jdbc's schema scripts ({@code GET_LOCK}): {@value}. */
  static final String MARIADB_SCHEMA_LOCK = "idem_schema";
  /** Seconds a MariaDB start-up waits for that lock, as store-jdbc's: {@value}. */
  static final int MARIADB_SCHEMA_LOCK_WAIT_SECONDS = 60;
  /** Table name in the migration: {@value}. */
  public static final String DEFAULT_TABLE = "idem_http_responses";
  /** The processed-events table the migration's foreign key names: {@value}. */
  public static final String DEFAULT_MARKER_TABLE = "idem_processed_events";

  /** store-jdbc's schema lock ({@code pg_advisory_xact_lock}), so scripts never race. */
  static final long SCHEMA_LOCK = 7358201946L;

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  /**
   * Sets the transaction-local {@code lock_timeout} back to the connection's default: store-jdbc's
   * claim sets it for the rest of the transaction ({@code set_config(…, true)}).
   */
  public static final String RESET_LOCK_TIMEOUT = "SET LOCAL lock_timeout TO DEFAULT";

  private final String table;
  private final String markerTable;
  private final Dialect dialect;

  private ResponseTableSql(String table, String markerTable, Dialect dialect) {
    this.table = table;
    this.markerTable = markerTable;
    this.dialect = dialect;
  }

  /**
   * PostgreSQL's.
   *
   * @param table {@code table} or {@code schema.table}
   * @param markerTable the processed-events table, same form
   * @throws IllegalArgumentException when a name is not a plain identifier (or two joined by a dot)
   */
  public static ResponseTableSql of(String table, String markerTable) {
    return of(table, markerTable, Dialect.POSTGRESQL);
  }

  /** {@code dialect}'s (a MariaDB {@code schema.table} is {@code database.table}). */
  public static ResponseTableSql of(String table, String markerTable, Dialect dialect) {
    return new ResponseTableSql(checked("tableName", table), checked("processedEventsTable", markerTable),
        Objects.requireNonNull(dialect, "dialect"));
  }

  /** The database these statements are written for. */
  public Dialect dialect() {
    return dialect;
  }

  /**
   * This database's migrations, in order: {@link #MIGRATION_RESOURCE} and {@link
   * #IN_MARKERS_MIGRATION_RESOURCE}, or the MariaDB ones.
   */
  public List<String> migrationResources() {
    return dialect == Dialect.MARIADB
        ? List.of(MARIADB_MIGRATION_RESOURCE, MARIADB_IN_MARKERS_MIGRATION_RESOURCE)
        : List.of(MIGRATION_RESOURCE, IN_MARKERS_MIGRATION_RESOURCE);
  }

  private static String checked(String setting, String name) {
    Objects.requireNonNull(name, setting);
    String[] parts = name.split("\\.", -1);
    if (parts.length > 2) {
      throw new IllegalArgumentException(setting + " must be a table or schema.table, but was '" + name + "'");
    }
    for (String part : parts) {
      if (!IDENTIFIER.matcher(part).matches()) {
        throw new IllegalArgumentException(setting + " must be a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*,"
            + " at most 63 characters) or schema.table, but was '" + name + "'");
      }
    }
    return name.toLowerCase(Locale.ROOT);
  }

  /** The table, lower-cased as PostgreSQL folds it (and as store-jdbc names MariaDB's). */
  public String table() {
    return table;
  }

  /** The processed-events table, lower-cased. */
  public String markerTable() {
    return markerTable;
  }

  /**
   * The response stored in the key's marker, which the claim of the same transaction inserted:
   * parameters status, headers (JSON), body, consumer group, key. It changes no indexed column (on
   * PostgreSQL a HOT update when the marker's page has room). Only a marker without a response
   * matches: run at once, it must update exactly one row, else the marker is not this
   * transaction's (a swallowed deadlock rolled the claim back and another request's transaction
   * claimed and answered the key) and nothing may commit.
   */
  public String store() {
    return "UPDATE " + markerTable + " SET response_status = ?, response_headers = ?, response_body = ?"
        + " WHERE consumer_group = ? AND idempotency_key = ? AND response_status IS NULL";
  }

  /**
   * The stored response of a key (parameters consumer group, key): the marker's columns, or, for a
   * response stored before {@value #IN_MARKERS_MIGRATION_RESOURCE}, its row of {@link #table()};
   * status {@code NULL} when there is neither. One row at most: both are keyed by the primary key.
   */
  public String select() {
    return "SELECT coalesce(m.response_status, r.status),"
        + " CASE WHEN m.response_status IS NULL THEN r.headers ELSE m.response_headers END,"
        + " CASE WHEN m.response_status IS NULL THEN r.body ELSE m.response_body END"
        + " FROM " + markerTable + " m LEFT JOIN " + table + " r"
        + " ON r.consumer_group = m.consumer_group AND r.idempotency_key = m.idempotency_key"
        + " WHERE m.consumer_group = ? AND m.idempotency_key = ?";
  }

  /** Reads no row; fails when a table or a column is missing. */
  public String probe() {
    return "SELECT m.response_status, m.response_headers, m.response_body,"
        + " r.consumer_group, r.idempotency_key, r.status, r.headers, r.body, r.stored_at FROM "
        + markerTable + " m LEFT JOIN " + table + " r"
        + " ON r.consumer_group = m.consumer_group AND r.idempotency_key = m.idempotency_key WHERE false";
  }

  /** The migrations, joined, with both table names (and the constraint name) substituted. */
  public String script() {
    StringBuilder joined = new StringBuilder();
    for (String resource : migrationResources()) {
      joined.append(readResource(resource)).append(";\n");
    }
    String sql = joined.toString();
    String unqualified = table.substring(table.lastIndexOf('.') + 1);
    sql = sql.replace("idem_http_responses_marker_fk", unqualified + "_marker_fk");
    sql = Pattern.compile("\\b" + DEFAULT_MARKER_TABLE + "\\b").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(markerTable));
    return Pattern.compile("\\b" + DEFAULT_TABLE + "\\b(?!_)").matcher(sql)
        .replaceAll(Matcher.quoteReplacement(table));
  }

  /** The statements of {@link #script()}, comment lines removed, blank ones dropped. */
  public String[] statements() {
    return java.util.Arrays.stream(script().split(";"))
        .map(ResponseTableSql::stripComments)
        .filter(s -> !s.isBlank())
        .toArray(String[]::new);
  }

  /** {@code SELECT pg_advisory_xact_lock(…)}: taken before the script, in its transaction. */
  public static String schemaLock() {
    return "SELECT pg_advisory_xact_lock(" + SCHEMA_LOCK + ")";
  }

  /**
   * MariaDB's {@code SELECT GET_LOCK('idem_schema', 60)}: 1 when taken. MariaDB's DDL commits on
   * its own, so the script runs in auto-commit under this connection-held lock (store-jdbc's
   * scripts take the same), released by {@link #mariaDbSchemaUnlock()}.
   */
  public static String mariaDbSchemaLock() {
    return "SELECT GET_LOCK('" + MARIADB_SCHEMA_LOCK + "', " + MARIADB_SCHEMA_LOCK_WAIT_SECONDS + ")";
  }

  /** {@code DO RELEASE_LOCK('idem_schema')}. */
  public static String mariaDbSchemaUnlock() {
    return "DO RELEASE_LOCK('" + MARIADB_SCHEMA_LOCK + "')";
  }

  private static String stripComments(String sql) {
    StringBuilder out = new StringBuilder();
    for (String line : sql.split("\n")) {
      if (!line.strip().startsWith("--")) {
        out.append(line).append('\n');
      }
    }
    return out.toString();
  }

  private static String readResource(String name) {
    ClassLoader loader = ResponseTableSql.class.getClassLoader();
    try (InputStream in = loader.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is not on the classpath (it ships in idem-store-jdbc)");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
