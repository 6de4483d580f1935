package io.idem.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.http.internal.ResponseTableSql;
import io.idem.http.internal.SqlFailures;
import io.idem.http.spi.StoredResponse;
import io.idem.http.spi.StoredResponses;
import io.idem.store.jdbc.Dialect;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.jspecify.annotations.Nullable;

/**
 * The stored responses on PostgreSQL or MariaDB, for a store whose transaction context is a MyBatis
 * {@link SqlSession}: store-jdbc's {@link MyBatisProcessedEventStore}, or the Spring starter's
 * store. A response is stored in its key's own processed-events marker (columns {@code
 * response_status}, {@code response_headers}, {@code response_body}: migration {@value
 * ResponseTableSql#IN_MARKERS_MIGRATION_RESOURCE} in {@code idem-store-jdbc}, on MariaDB {@value
 * ResponseTableSql#MARIADB_IN_MARKERS_MIGRATION_RESOURCE}), by an UPDATE of the row the claim of
 * the same transaction inserted; responses stored before that migration are read from the table
 * {@code idem_http_responses} ({@value ResponseTableSql#MIGRATION_RESOURCE}, {@value
 * ResponseTableSql#MARIADB_MIGRATION_RESOURCE}). The UPDATE runs on the session's own connection
 * inside the claiming transaction (plain JDBC, so it works whatever mappers the session's factory
 * has) — on a store-jdbc transaction on pgjdbc in the COMMIT's round trip, so that a new key costs
 * 3 round trips with {@link #processedEventStore} (docs/HTTP.md, "Round trips"); {@link #find}
 * and the start-up checks run on the {@link DataSource}.
 *
 * <p>Being the marker's own row, a response lives exactly as long as its marker: the store's
 * {@code RetentionJob} purging a marker purges its response (docs/HTTP.md, "Retention").
 *
 * <p>Thread-safe.
 */
public final class JdbcStoredResponses implements StoredResponses<SqlSession> {
  /** Default {@link Builder#tableName}: {@value}. */
  public static final String DEFAULT_TABLE = ResponseTableSql.DEFAULT_TABLE;

  /**
   * The claim lock timeout an Idempotency-Key endpoint's store should have: 1 ms, the shortest
   * PostgreSQL's {@code lock_timeout} takes (0 would disable it). A repeat of a key whose first
   * request is still in its transaction then answers 409 at once instead of waiting for it
   * (docs/HTTP.md, "In flight").
   */
  public static final Duration IN_FLIGHT_CLAIM_LOCK_TIMEOUT = Duration.ofMillis(1);

  private static final ObjectMapper JSON = new ObjectMapper();

  private final DataSource dataSource;
  private final ResponseTableSql sql;
  private final boolean resetLockTimeout;

  private JdbcStoredResponses(Builder b, Dialect dialect) {
    this.dataSource = b.dataSource;
    this.sql = ResponseTableSql.of(b.tableName, b.processedEventsTable, dialect);
    this.resetLockTimeout = b.resetLockTimeout;
  }

  /** Starts building on the data source whose connections the store's sessions use. */
  public static Builder builder(DataSource dataSource) {
    return new Builder(dataSource);
  }

  /** Starts building on the data source of {@code sessions}' MyBatis environment. */
  public static Builder builder(SqlSessionFactory sessions) {
    Objects.requireNonNull(sessions, "sessions");
    var environment = sessions.getConfiguration().getEnvironment();
    if (environment == null) {
      throw new IllegalStateException("the SqlSessionFactory has no Environment (no DataSource)");
    }
    return new Builder(environment.getDataSource());
  }

  /**
   * store-jdbc's builder preset for an Idempotency-Key endpoint: {@link
   * #IN_FLIGHT_CLAIM_LOCK_TIMEOUT}, so that a repeat of an in-flight key answers 409 at once, for
   * the claim only ({@link MyBatisProcessedEventStore.Builder#restoreLockTimeoutAfterClaim}: the
   * handler's lock waits keep the connection's {@code lock_timeout}, at no extra round trip).
   */
  public static MyBatisProcessedEventStore.Builder processedEventStore(SqlSessionFactory sessions) {
    return MyBatisProcessedEventStore.builder(sessions).claimLockTimeout(IN_FLIGHT_CLAIM_LOCK_TIMEOUT)
        .restoreLockTimeoutAfterClaim(true);
  }

  /**
   * The table of responses stored before {@value ResponseTableSql#IN_MARKERS_MIGRATION_RESOURCE}
   * (still read, never written), lower-cased.
   */
  public String tableName() {
    return sql.table();
  }

  /** The processed-events table whose markers hold the responses, lower-cased. */
  public String processedEventsTableName() {
    return sql.markerTable();
  }

  /** The database the statements are written for: {@link Builder#dialect}, or read at {@link Builder#build()}. */
  public Dialect dialect() {
    return sql.dialect();
  }

  /**
   * {@value ResponseTableSql#RESET_LOCK_TIMEOUT} (one round trip), unless {@link
   * Builder#resetLockTimeout(boolean)} is off or the store's claim already set the lock timeout
   * back in its own round trip ({@link MyBatisProcessedEventStore#lockTimeoutRestoredAfterClaim}:
   * the store built with {@link #processedEventStore}).
   */
  @Override
  public void beforeHandler(SqlSession transaction) {
    if (!resetLockTimeout || sql.dialect() == Dialect.MARIADB
        || MyBatisProcessedEventStore.lockTimeoutRestoredAfterClaim(transaction)) {
      return; // MariaDB's claim bounds its own statement only (SET STATEMENT … FOR)
    }
    try (Statement s = transaction.getConnection().createStatement()) {
      s.execute(ResponseTableSql.RESET_LOCK_TIMEOUT);
    } catch (SQLException e) {
      throw new IllegalStateException("could not reset lock_timeout before the handler: " + e.getMessage(), e);
    }
  }

  /**
   * The UPDATE of the key's marker (inserted by the claim of {@code transaction}), sent in the
   * COMMIT's round trip on PostgreSQL ({@link MyBatisProcessedEventStore#executeBeforeCommit}: it
   * commits with the marker or not at all, and its failure fails the transaction at the commit);
   * at once elsewhere (MariaDB, another driver, a session the store did not open).
   */
  @Override
  public void save(SqlSession transaction, IdempotencyKey key, StoredResponse response) {
    int updated;
    try {
      updated = MyBatisProcessedEventStore.executeBeforeCommit(transaction, sql.store(), response.status(),
          headersJson(response.headers()), response.body(), key.consumerGroup(), key.value());
    } catch (SQLException e) {
      throw new IllegalStateException("could not store the response of key '" + key.value() + "' in "
          + sql.markerTable() + ": " + e.getMessage(), e);
    }
    if (updated == 0) {
      // run at once (MariaDB, another driver, the Spring starter's session) and nothing matched:
      // the key's marker is not this transaction's, or already holds another request's response
      throw new IllegalStateException("the response of key '" + key.value() + "' found no marker of"
          + " this transaction without a response in " + sql.markerTable() + ": the claim was lost"
          + " (a swallowed deadlock rolled it back, or the handler ended the transaction) and another"
          + " request may have answered the key; nothing is committed");
    }
  }

  @Override
  public @Nullable StoredResponse find(IdempotencyKey key) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement s = c.prepareStatement(sql.select())) {
      s.setString(1, key.consumerGroup());
      s.setString(2, key.value());
      try (ResultSet rows = s.executeQuery()) {
        if (!rows.next()) {
          return null;
        }
        int status = rows.getInt(1);
        if (rows.wasNull()) {
          return null;
        }
        return new StoredResponse(status, headers(rows.getString(2)), rows.getBytes(3));
      }
    } catch (SQLException | RuntimeException e) {
      throw SqlFailures.failure("could not read the stored response of key '" + key.value() + "' from "
          + sql.markerTable(), e);
    }
  }

  private static String headersJson(List<StoredResponse.Header> headers) {
    List<List<String>> pairs = new ArrayList<>(headers.size());
    for (StoredResponse.Header h : headers) {
      pairs.add(List.of(h.name(), h.value()));
    }
    try {
      return JSON.writeValueAsString(pairs);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static List<StoredResponse.Header> headers(String json) {
    try {
      String[][] pairs = JSON.readValue(json, String[][].class);
      List<StoredResponse.Header> headers = new ArrayList<>(pairs.length);
      for (String[] pair : pairs) {
        headers.add(new StoredResponse.Header(pair[0], pair[1]));
      }
      return headers;
    } catch (JsonProcessingException | RuntimeException e) {
      throw new IllegalStateException("stored response headers are not a JSON array of [name, value]"
          + " pairs: " + e.getMessage(), e);
    }
  }

  /** Creates the table when missing: the migration, under store-jdbc's schema lock. */
  private void createTable() {
    try (Connection c = dataSource.getConnection()) {
      if (sql.dialect() == Dialect.MARIADB) {
        createOnMariaDb(c);
        return;
      }
      boolean autoCommit = c.getAutoCommit();
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.execute(ResponseTableSql.schemaLock());
        for (String statement : sql.statements()) {
          s.execute(statement);
        }
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(autoCommit);
      }
    } catch (SQLException | RuntimeException e) {
      throw SqlFailures.failure("could not create " + sql.table() + " or the response columns of "
          + sql.markerTable() + " (does the processed-events table exist? create the store first)", e);
    }
  }

  /** MariaDB's DDL commits on its own: the script in auto-commit, under the named schema lock. */
  private void createOnMariaDb(Connection c) throws SQLException {
    boolean autoCommit = c.getAutoCommit();
    c.setAutoCommit(true);
    try (Statement s = c.createStatement()) {
      try (ResultSet locked = s.executeQuery(ResponseTableSql.mariaDbSchemaLock())) {
        if (!locked.next() || locked.getInt(1) != 1) {
          throw new SQLException("another instance held the schema lock too long while applying the schema", "HY000");
        }
      }
      try {
        for (String statement : sql.statements()) {
          s.execute(statement);
        }
      } finally {
        s.execute(ResponseTableSql.mariaDbSchemaUnlock());
      }
    } finally {
      c.setAutoCommit(autoCommit);
    }
  }

  /**
   * The database behind {@code dataSource}, from one connection's metadata: MariaDB when its
   * product name says so (also MySQL Connector/J on a MariaDB server), PostgreSQL otherwise (the
   * store refuses other databases itself).
   */
  private static Dialect detect(DataSource dataSource) {
    try (Connection c = dataSource.getConnection()) {
      var metadata = c.getMetaData();
      String product = String.valueOf(metadata.getDatabaseProductName()).toLowerCase(java.util.Locale.ROOT);
      String version = String.valueOf(metadata.getDatabaseProductVersion()).toLowerCase(java.util.Locale.ROOT);
      return product.equals("mariadb") || (product.equals("mysql") && version.contains("mariadb"))
          ? Dialect.MARIADB : Dialect.POSTGRESQL;
    } catch (SQLException | RuntimeException e) {
      throw SqlFailures.failure("could not read which database the stored responses are on", e);
    }
  }

  /**
   * Whether the table and the marker's response columns are there (the probe, no DDL lock taken):
   * {@code false} only when the probe fails for a missing table or column (PostgreSQL 42P01,
   * 42703; MariaDB 42S02, 42S22); any other failure (no permission, a lock timeout, an outage) is
   * thrown, not taken for a missing schema.
   */
  private boolean present() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.executeQuery(sql.probe()).close();
      return true;
    } catch (SQLException | RuntimeException e) {
      String state = e instanceof SQLException sqlError ? sqlError.getSQLState() : null;
      if ("42P01".equals(state) || "42703".equals(state) || "42S02".equals(state) || "42S22".equals(state)) {
        return false;
      }
      throw SqlFailures.failure("could not read whether " + sql.markerTable() + "'s response columns and "
          + sql.table() + " exist", e);
    }
  }

  private void verify() {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.executeQuery(sql.probe()).close();
    } catch (SQLException | RuntimeException e) {
      throw SqlFailures.failure(sql.markerTable() + "'s response columns or " + sql.table()
          + " are missing or misshapen (apply " + String.join(" and ", sql.migrationResources())
          + ", or createTableIfMissing(true))", e);
    }
  }

  @Override
  public String toString() {
    return "JdbcStoredResponses[" + sql.table() + "]";
  }

  /** Builder of {@link JdbcStoredResponses}; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final DataSource dataSource;
    private String tableName = DEFAULT_TABLE;
    private String processedEventsTable = MyBatisProcessedEventStore.DEFAULT_TABLE;
    private boolean createTableIfMissing;
    private boolean verifyTable = true;
    private boolean resetLockTimeout = true;
    private @Nullable Dialect dialect;

    private Builder(DataSource dataSource) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * The table of responses stored before {@value ResponseTableSql#IN_MARKERS_MIGRATION_RESOURCE}
     * ({@value ResponseTableSql#MIGRATION_RESOURCE}), read when a marker holds no response, never
     * written. Default {@value JdbcStoredResponses#DEFAULT_TABLE}; {@code table} or {@code
     * schema.table}.
     */
    public Builder tableName(String value) {
      this.tableName = Objects.requireNonNull(value, "tableName");
      return this;
    }

    /**
     * The store's processed-events table, whose markers hold the responses (and which the old
     * table's foreign key references); default {@value MyBatisProcessedEventStore#DEFAULT_TABLE}.
     * It must be the store's: {@link IdempotencyKeyEndpoint.Builder#build()} refuses another.
     */
    public Builder processedEventsTable(String value) {
      this.processedEventsTable = Objects.requireNonNull(value, "processedEventsTable");
      return this;
    }

    /**
     * Default {@code false}. {@code true} runs the migrations ({@value
     * ResponseTableSql#MIGRATION_RESOURCE}'s {@code CREATE TABLE IF NOT EXISTS} and {@value
     * ResponseTableSql#IN_MARKERS_MIGRATION_RESOURCE}'s {@code ADD COLUMN IF NOT EXISTS}, under
     * store-jdbc's schema lock; the MariaDB ones on MariaDB) when {@link #build()} is called; the
     * processed-events table must exist first (build the store first).
     */
    public Builder createTableIfMissing(boolean value) {
      this.createTableIfMissing = value;
      return this;
    }

    /** Default {@code true}: {@link #build()} reads the table once and fails when it is not there. */
    public Builder verifyTable(boolean value) {
      this.verifyTable = value;
      return this;
    }

    /**
     * Default {@code true}: on a store whose claim keeps its lock timeout for the transaction (not
     * built with {@link JdbcStoredResponses#processedEventStore}, or the Spring starter's), {@link
     * JdbcStoredResponses#beforeHandler} sends {@value ResponseTableSql#RESET_LOCK_TIMEOUT}, so
     * that the endpoint's short claim lock timeout ({@link
     * JdbcStoredResponses#IN_FLIGHT_CLAIM_LOCK_TIMEOUT}) bounds the claim only, not the handler's
     * own lock waits. {@code false} saves that round trip when the store's claim lock timeout is
     * one the handler may share. Nothing is sent either way when the store restored the lock
     * timeout in the claim's own round trip.
     */
    public Builder resetLockTimeout(boolean value) {
      this.resetLockTimeout = value;
      return this;
    }

    /**
     * Default {@code null}: {@link #build()} reads the database from one connection's metadata
     * when it reaches the database anyway ({@link #verifyTable} or {@link #createTableIfMissing}),
     * and assumes PostgreSQL when it does neither. Given, it must be the store's database.
     */
    public Builder dialect(@Nullable Dialect value) {
      this.dialect = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException when a table name is not a plain identifier
     * @throws IllegalStateException when the table is missing or misshapen, or could not be created
     * @throws StoreUnavailableException when the database could not be reached
     */
    public JdbcStoredResponses build() {
      ResponseTableSql.of(tableName, processedEventsTable); // the names, before the database
      Dialect resolved = dialect != null ? dialect
          : verifyTable || createTableIfMissing ? detect(dataSource) : Dialect.POSTGRESQL;
      JdbcStoredResponses responses = new JdbcStoredResponses(this, resolved);
      if (createTableIfMissing && !responses.present()) {
        // only when something is missing: the DDL (ALTER TABLE … ADD COLUMN IF NOT EXISTS) takes
        // PostgreSQL's ACCESS EXCLUSIVE lock (MariaDB's metadata lock) on the processed-events
        // table before it finds the columns there, and would queue every claim behind it
        responses.createTable();
      }
      if (verifyTable) {
        responses.verify();
      }
      return responses;
    }
  }
}
