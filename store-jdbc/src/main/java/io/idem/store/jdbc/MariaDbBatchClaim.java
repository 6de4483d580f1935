package io.idem.store.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.ibatis.exceptions.PersistenceException;
import org.apache.ibatis.mapping.BoundSql;
import org.apache.ibatis.mapping.ParameterMapping;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The multi-row claim on MariaDB ({@link ClaimStatement#claimAll}): the distinct keys of a batch,
 * sorted, in one {@code INSERT IGNORE … VALUES (…),(…) RETURNING} (the mapper's {@code claimAll},
 * mariadb) under {@code SET STATEMENT innodb_lock_wait_timeout = n, max_error_count = 65535 FOR},
 * then, only when some key was not inserted, the statement's warnings ({@code SHOW WARNINGS}, which
 * the driver sends when the statement reported any) and one locking read of the stored fingerprints
 * of the keys not inserted (the mapper's {@code fingerprints}, mariadb). So a batch of new keys
 * costs one round trip and a batch with existing keys three, whatever its size up to {@link
 * #MAX_ROWS} distinct keys (one more statement per further {@link #MAX_ROWS}).
 *
 * <p>What one claim per key in (group, key) order decided, this decides the same way: InnoDB
 * inserts the rows in VALUES order one after the other, each waiting — bounded by the claim lock
 * timeout, error 1205 then, which IGNORE leaves an error, as it does a deadlock's 1213 — for a
 * transaction that holds its key uncommitted, then skipping the row (it committed; a shared lock
 * stays on the row, as after error 1062) or inserting it (it rolled back).
 *
 * <p>The guard. IGNORE makes warnings of more errors than the duplicate key (1062): a value too
 * long is truncated, a string the column cannot hold converted, a NOT NULL column without a default
 * given an implicit value, a row failing a CHECK or a foreign key skipped. The keys are validated
 * ({@link io.idem.IdempotencyKey}: lengths within the columns' that the start-up checks verify, no
 * NUL, no unpaired surrogate) and the fingerprints are 32 bytes, so none of them happens on the
 * table the store's migration creates; on any other table, or through a connection whose character
 * set cannot hold a key, this refuses the answer — a {@link PersistenceException}, the claim's
 * failure, and the transaction is rolled back — unless all of these hold: every warning of the
 * statement is 1062 and there is exactly one per row not inserted; every row RETURNING gives back
 * holds exactly the group, key, key source and fingerprint sent for it; every key not inserted is
 * found by the locking read under exactly its group and key. Nothing wrong is ever committed.
 *
 * <p>Immutable and thread-safe (the rendered statements are cached per row count); the session
 * passed in belongs to the calling thread.
 */
final class MariaDbBatchClaim {
  /**
   * At most this many rows per INSERT: its warnings (one 1062 per duplicate, a few at most per
   * row) stay far within {@code max_error_count = 65535}, the statement within the 65,535
   * placeholders a prepared statement takes, and its text within MariaDB's default {@code
   * max_allowed_packet} (16 MiB; a row of the longest key is about 2.7 KB).
   */
  static final int MAX_ROWS = 1000;

  /** The SQL prefix of the INSERT: {@code innodb_lock_wait_timeout} and room for every warning. */
  private static final String SET_STATEMENT = "SET STATEMENT innodb_lock_wait_timeout = %d,"
      + " max_error_count = 65535 FOR ";

  /** The order the INSERT binds each row's parameters in (checked when it is rendered). */
  private static final List<String> ROW_PARAMETERS = List.of("consumerGroup", "key", "keySource", "fingerprint");

  private final Configuration configuration;
  private final String claimAllStatement;
  private final String fingerprintsStatement;
  private final TableName table;
  private final long lockWaitSeconds;
  /** The rendered INSERTs by row count, for at most {@link #CACHED_SIZES} counts (a batch size and its tails). */
  private final Map<Integer, String> sqlByRows = new ConcurrentHashMap<>();
  private static final int CACHED_SIZES = 64;

  /**
   * @param namespace the table's mapper namespace, registered for MariaDB
   * @param lockWaitSeconds the claim lock timeout as {@code innodb_lock_wait_timeout} ({@link Dialect#lockWaitSeconds})
   */
  MariaDbBatchClaim(Configuration configuration, String namespace, TableName table, long lockWaitSeconds) {
    this.configuration = configuration;
    this.claimAllStatement = namespace + ".claimAll";
    this.fingerprintsStatement = namespace + ".fingerprints";
    this.table = table;
    this.lockWaitSeconds = lockWaitSeconds;
    sql(1); // a mapper that does not bind what this binds fails the store's build, not a batch
  }

  /** One key to claim, with what is stored for it when it is new. */
  record Row(String consumerGroup, String key, String keySource, byte[] fingerprint) {}

  /**
   * What the claim found for each row, parallel to the rows: inserted by this transaction, or the
   * fingerprint stored (never {@code null} for a row not inserted).
   */
  record Found(boolean[] inserted, byte[][] stored) {}

  /**
   * Claims {@code rows} (distinct, in (group, key) order) in {@link #MAX_ROWS}-row statements,
   * calling {@code onInserted} for each row inserted once its statement passed the guard.
   *
   * @throws PersistenceException with the driver's {@link SQLException} as its cause on a database
   *     failure (the caller classifies 1205 and 1213), or without one when the guard refuses the
   *     statement's answer (see the class documentation)
   */
  Found claim(SqlSession transaction, List<Row> rows, Consumer<Row> onInserted) {
    boolean[] inserted = new boolean[rows.size()];
    byte[][] stored = new byte[rows.size()][];
    for (int from = 0; from < rows.size(); from += MAX_ROWS) {
      List<Row> chunk = rows.subList(from, Math.min(rows.size(), from + MAX_ROWS));
      boolean[] chunkInserted = insert(transaction, chunk);
      List<Row> existing = new ArrayList<>();
      for (int i = 0; i < chunk.size(); i++) {
        if (chunkInserted[i]) {
          inserted[from + i] = true;
          onInserted.accept(chunk.get(i));
        } else {
          existing.add(chunk.get(i));
        }
      }
      if (!existing.isEmpty()) {
        Map<ClaimStatement.KeyOf, byte[]> fingerprints = storedFingerprints(transaction, existing);
        for (int i = 0; i < chunk.size(); i++) {
          if (!chunkInserted[i]) {
            stored[from + i] = fingerprints.get(keyOf(chunk.get(i)));
          }
        }
      }
    }
    return new Found(inserted, stored);
  }

  /** The INSERT of one chunk; which of its rows it inserted, guarded. */
  private boolean[] insert(SqlSession transaction, List<Row> chunk) {
    Map<ClaimStatement.KeyOf, Integer> index = new HashMap<>();
    for (int i = 0; i < chunk.size(); i++) {
      index.put(keyOf(chunk.get(i)), i);
    }
    boolean[] inserted = new boolean[chunk.size()];
    Connection connection = GuardedSession.unguarded(transaction).getConnection();
    String what = chunk.size() + " keys (one batch)";
    try (PreparedStatement insert = connection.prepareStatement(sql(chunk.size()))) {
      int p = 1;
      for (Row row : chunk) {
        insert.setString(p++, row.consumerGroup());
        insert.setString(p++, row.key());
        insert.setString(p++, row.keySource());
        insert.setBytes(p++, row.fingerprint());
      }
      int count = 0;
      try (ResultSet returned = insert.executeQuery()) {
        while (returned.next()) {
          int i = sentFor(chunk, index, returned, what);
          if (inserted[i]) {
            throw refused(what, "it returned key '" + chunk.get(i).key() + "' twice");
          }
          inserted[i] = true;
          count++;
        }
      }
      checkWarnings(insert.getWarnings(), chunk.size() - count, what);
    } catch (SQLException e) {
      throw new PersistenceException("Error querying database (the claim of " + what
          + " in processed-events table " + table.qualified() + "). Cause: " + e, e);
    }
    return inserted;
  }

  /** The index of the row sent that the returned row is, exactly; the guard refuses any other. */
  private int sentFor(List<Row> chunk, Map<ClaimStatement.KeyOf, Integer> index, ResultSet returned,
      String what) throws SQLException {
    String group = returned.getString(1);
    String key = returned.getString(2);
    Integer i = index.get(new ClaimStatement.KeyOf(group, key));
    if (i == null) {
      throw refused(what, "it stored key '" + key + "' of group '" + group + "', which is none of"
          + " the keys sent (a key truncated or converted by the column or the connection's"
          + " character set?)");
    }
    Row sent = chunk.get(i);
    if (!sent.keySource().equals(returned.getString(3)) || !Arrays.equals(sent.fingerprint(), returned.getBytes(4))) {
      throw refused(what, "it stored key '" + key + "' with key source '" + returned.getString(3)
          + "' and a fingerprint of " + lengthOf(returned.getBytes(4)) + " bytes, not what was sent ("
          + sent.keySource() + ", 32 bytes)");
    }
    return i;
  }

  private static String lengthOf(byte @Nullable [] bytes) {
    return bytes == null ? "no" : Integer.toString(bytes.length);
  }

  /**
   * The guard on the INSERT's warnings ({@code SHOW WARNINGS}, sent by the driver only when the
   * statement reported some): exactly {@code ignored} of them, each 1062.
   */
  private void checkWarnings(@Nullable SQLWarning warnings, int ignored, String what) {
    int duplicates = 0;
    for (SQLWarning w = warnings; w != null; w = w.getNextWarning()) {
      if (w.getErrorCode() != Dialect.ER_DUP_ENTRY) {
        throw refused(what, "IGNORE turned an error other than a duplicate key into a warning (MariaDB"
            + " error " + w.getErrorCode() + ", SQLSTATE " + w.getSQLState() + "): " + w.getMessage());
      }
      duplicates++;
      if (w.getNextWarning() == w) {
        break;
      }
    }
    if (duplicates != ignored) {
      throw refused(what, ignored + " of its rows were not inserted, but it warned of " + duplicates
          + " duplicate keys (does the driver report the statement's warnings? a unique index"
          + " besides (consumer_group, idempotency_key)?)");
    }
  }

  /**
   * The locking read of the fingerprints stored for {@code existing} (keys the INSERT skipped),
   * by exactly their group and key; the guard refuses a key it does not find.
   */
  private Map<ClaimStatement.KeyOf, byte[]> storedFingerprints(SqlSession transaction, List<Row> existing) {
    List<Map<String, Object>> keys = new ArrayList<>(existing.size());
    for (Row row : existing) {
      keys.add(Map.of("consumerGroup", row.consumerGroup(), "key", row.key()));
    }
    Map<String, Object> params = new HashMap<>();
    params.put("keys", keys);
    params.put("lockWaitSeconds", lockWaitSeconds);
    Map<ClaimStatement.KeyOf, byte[]> stored = new HashMap<>();
    for (Map<String, Object> row : transaction.<Map<String, Object>>selectList(fingerprintsStatement, params)) {
      byte[] fingerprint = (byte[]) row.get("stored");
      if (fingerprint != null) {
        stored.put(new ClaimStatement.KeyOf(Rows.required(row, "consumerGroup", String.class),
            Rows.required(row, "key", String.class)), fingerprint);
      }
    }
    for (Row row : existing) {
      if (!stored.containsKey(keyOf(row))) {
        throw refused(existing.size() + " existing keys (one batch)", "key '" + row.key()
            + "' of group '" + row.consumerGroup() + "' was neither inserted nor found: IGNORE"
            + " skipped its row for another reason than a duplicate (consumer_group,"
            + " idempotency_key) — a CHECK, a foreign key, a unique index besides it");
      }
    }
    return stored;
  }

  private PersistenceException refused(String what, String why) {
    return new PersistenceException("the claim of " + what + " in processed-events table "
        + table.qualified() + " is refused, nothing is claimed (the transaction is rolled back): "
        + why + " (docs/STORE.md, \"Databases\")");
  }

  private static ClaimStatement.KeyOf keyOf(Row row) {
    return new ClaimStatement.KeyOf(row.consumerGroup(), row.key());
  }

  /** The INSERT of {@code rows} rows, rendered from the mapper once per row count and checked. */
  String sql(int rows) {
    String cached = sqlByRows.get(rows);
    if (cached != null) {
      return cached;
    }
    String sql = render(rows);
    if (sqlByRows.size() < CACHED_SIZES) {
      sqlByRows.put(rows, sql);
    }
    return sql;
  }

  private String render(int n) {
    List<Map<String, Object>> placeholders = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      placeholders.add(new HashMap<>());
    }
    Map<String, Object> params = new HashMap<>();
    params.put("rows", placeholders);
    BoundSql bound = configuration.getMappedStatement(claimAllStatement, false).getBoundSql(params);
    List<ParameterMapping> mappings = bound.getParameterMappings();
    boolean expected = mappings.size() == n * ROW_PARAMETERS.size();
    for (int i = 0; expected && i < mappings.size(); i++) {
      expected = mappings.get(i).getProperty().endsWith("." + ROW_PARAMETERS.get(i % ROW_PARAMETERS.size()));
    }
    if (!expected) {
      throw new IllegalStateException("the claim statement " + claimAllStatement + " binds "
          + mappings.stream().map(ParameterMapping::getProperty).toList() + ", expected " + ROW_PARAMETERS
          + " for each of its " + n + " rows");
    }
    return String.format(SET_STATEMENT, lockWaitSeconds) + bound.getSql().strip();
  }
}
