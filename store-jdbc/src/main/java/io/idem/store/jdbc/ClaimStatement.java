package io.idem.store.jdbc;

import io.idem.IdempotencyKey;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.ibatis.exceptions.PersistenceException;
import org.apache.ibatis.mapping.BoundSql;
import org.apache.ibatis.mapping.ParameterMapping;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The claim: one statement (one round trip) that sets the transaction-local {@code lock_timeout}
 * to {@link MyBatisProcessedEventStore.Builder#claimLockTimeout}, inserts the marker unless the
 * key exists ({@code INSERT … ON CONFLICT DO NOTHING RETURNING txid_current()} in a CTE that
 * otherwise reads the stored fingerprint), and returns either the claiming transaction id (new)
 * or the stored fingerprint (duplicate or conflict). "New" is decided from the row the INSERT
 * really returned; a unique violation is never caught inside the transaction (PostgreSQL would
 * abort it). Only when it returns no row — it waited for a racing transaction that then
 * committed, whose row the statement's snapshot (taken before the wait, PostgreSQL's READ
 * COMMITTED rule) cannot see — a second statement reads the fingerprint, so a racing conflict is
 * never called a duplicate (docs/DESIGN.md, "Store rules").
 *
 * <p>The {@code lock_timeout} stays set for the rest of the transaction, so it also bounds the
 * handler's statements; a lock timeout there is the handler's failure, not a retry of the
 * transaction — unless the store restores it ({@link
 * MyBatisProcessedEventStore.Builder#restoreLockTimeoutAfterClaim}): the claim is then sent as
 * three statements in one round trip ({@link #SAVE_LOCK_TIMEOUT}, the claim, {@link
 * #RESTORE_LOCK_TIMEOUT}), so that only the claim's own lock wait is bounded by it.
 *
 * <p>On MariaDB ({@link Dialect#MARIADB}) the claim is a plain {@code INSERT} under {@code SET
 * STATEMENT innodb_lock_wait_timeout = n FOR}, a duplicate key (1062) answered by a locking read of
 * the stored fingerprint, and {@link #claimAll} one {@code INSERT IGNORE … RETURNING} of the
 * distinct keys in (group, key) order whose warnings are checked ({@link MariaDbBatchClaim};
 * docs/STORE.md, "Databases").
 *
 * <p>Immutable and thread-safe; the session passed in belongs to the calling thread.
 */
final class ClaimStatement {
  /** SQLSTATE of a lock wait that ran out of {@code lock_timeout}. */
  private static final String LOCK_NOT_AVAILABLE = "55P03";
  /** statement_timeout (or a cancel request): on a claim, its lock wait was cut short. */
  static final String QUERY_CANCELED = "57014";

  private final TableName table;
  private final String claimSql;
  private final String fingerprintStatement;
  private final String claimAllStatement;
  private final String fingerprintsStatement;
  private final String lockTimeout;
  private final Dialect dialect;
  /** Whether the claim sets {@code lock_timeout} back after itself (PostgreSQL; MariaDB always does). */
  private final boolean restoreLockTimeout;
  /** MariaDB's multi-row claim; {@code null} on PostgreSQL. */
  private final @Nullable MariaDbBatchClaim mariaDbBatch;

  /**
   * Keeps the transaction's {@code lock_timeout} before the claim changes it, in a custom setting
   * of the transaction ({@code set_config(…, true)}: gone at its end): {@value}.
   */
  static final String SAVE_LOCK_TIMEOUT = "SELECT pg_catalog.set_config('idem.lock_timeout_before_claim',"
      + " pg_catalog.current_setting('lock_timeout'), true)";

  /**
   * Sets {@code lock_timeout} back to what {@link #SAVE_LOCK_TIMEOUT} kept, for the rest of the
   * transaction: {@value}. PostgreSQL reads {@code lock_timeout} when a lock wait begins, so the
   * statements after this one (the handler's) wait as they would have without the claim.
   */
  static final String RESTORE_LOCK_TIMEOUT = "SELECT pg_catalog.set_config('lock_timeout',"
      + " pg_catalog.current_setting('idem.lock_timeout_before_claim'), true)";

  /**
   * @param configuration the configuration {@code namespace} is registered in
   * @param namespace the table's mapper namespace ({@link ProcessedEventsMapper#register})
   * @param table the processed-events table, validated by {@link TableName} (for messages)
   * @param lockTimeout PostgreSQL's {@code lock_timeout} value for the claim, such as {@code 2000ms}
   */
  ClaimStatement(Configuration configuration, String namespace, TableName table, String lockTimeout) {
    this(configuration, namespace, table, lockTimeout, Dialect.POSTGRESQL);
  }

  /**
   * @param lockTimeout the claim lock timeout in {@code dialect}'s terms ({@link
   *     Dialect#lockTimeout}): PostgreSQL's {@code lock_timeout} text, MariaDB's whole seconds
   * @param dialect whose claim {@code namespace} holds
   */
  ClaimStatement(Configuration configuration, String namespace, TableName table, String lockTimeout,
      Dialect dialect) {
    this(configuration, namespace, table, lockTimeout, dialect, false);
  }

  /**
   * @param restoreLockTimeout whether the claim sets {@code lock_timeout} back after itself, in its
   *     own round trip ({@link MyBatisProcessedEventStore.Builder#restoreLockTimeoutAfterClaim})
   */
  ClaimStatement(Configuration configuration, String namespace, TableName table, String lockTimeout,
      Dialect dialect, boolean restoreLockTimeout) {
    this.table = table;
    this.dialect = dialect;
    this.lockTimeout = lockTimeout;
    this.restoreLockTimeout = restoreLockTimeout && dialect == Dialect.POSTGRESQL;
    String sql = claimSql(configuration, namespace + ".claim",
        dialect == Dialect.MARIADB ? MARIADB_CLAIM_PARAMETERS : CLAIM_PARAMETERS);
    // MariaDB takes no placeholder in SET STATEMENT: the store's own integer, written as text
    this.claimSql = dialect == Dialect.MARIADB
        ? "SET STATEMENT innodb_lock_wait_timeout = " + Long.parseLong(lockTimeout) + " FOR " + sql.strip()
        : this.restoreLockTimeout ? SAVE_LOCK_TIMEOUT + "; " + sql.strip() + "; " + RESTORE_LOCK_TIMEOUT
        : sql;
    this.fingerprintStatement = namespace + ".fingerprint";
    this.claimAllStatement = namespace + ".claimAll";
    this.fingerprintsStatement = namespace + ".fingerprints";
    this.mariaDbBatch = dialect == Dialect.MARIADB
        ? new MariaDbBatchClaim(configuration, namespace, table, Long.parseLong(lockTimeout)) : null;
  }

  /** The claim's parameters, in the order its text binds them (checked at build). */
  private static final List<String> CLAIM_PARAMETERS =
      List.of("consumerGroup", "key", "keySource", "fingerprint", "lockTimeout", "consumerGroup", "key");

  /** MariaDB's claim's parameters (a plain INSERT), in order. */
  private static final List<String> MARIADB_CLAIM_PARAMETERS =
      List.of("consumerGroup", "key", "keySource", "fingerprint");

  /**
   * The text of the mapper's statement {@code claim} (ProcessedEventMapper.xml documents each
   * step), with its {@code #{}} parameters as {@code ?}, for a plain JDBC PreparedStatement on the
   * hot path. Its parameters must be {@link #CLAIM_PARAMETERS} in that order; columns: 1 inserted,
   * 2 txid, 3 stored fingerprint.
   */
  private static String claimSql(Configuration configuration, String statement, List<String> expected) {
    BoundSql bound = configuration.getMappedStatement(statement, false).getBoundSql(new HashMap<>());
    List<String> order = bound.getParameterMappings().stream().map(ParameterMapping::getProperty).toList();
    if (!order.equals(expected)) {
      throw new IllegalStateException("the claim statement " + statement + " binds " + order
          + ", expected " + expected);
    }
    return bound.getSql();
  }

  /**
   * The claim itself, on values {@link IdempotencyKey} has validated — or on the values no real key
   * can have that {@link ClaimProbe} claims at build. Records the transaction id in the session's
   * {@link OpenTransaction} for the commit check.
   *
   * @throws TransactionRetryException the claim waited longer than the lock timeout (55P03), or
   *     PostgreSQL asked for a retry (40001 under REPEATABLE READ or SERIALIZABLE, 40P01)
   * @throws RuntimeException (MyBatis' PersistenceException, the driver's SQLException as its
   *     cause, as MyBatis itself would wrap it) on any other database failure
   */
  ClaimResult claim(
      SqlSession transaction, String consumerGroup, String key, String keySource, byte[] fingerprint) {
    OpenTransaction open = GuardedSession.transactionOf(transaction);
    Answer answer = open == null ? null : open.takePreclaimed(consumerGroup, key, fingerprint);
    if (answer == null && dialect == Dialect.MARIADB) {
      answer = insert(transaction, consumerGroup, key, keySource, fingerprint);
    }
    if (answer == null) {
      try {
        // The same transaction: the session's own connection, never a second one. pgjdbc keeps the
        // server-prepared statement per connection by SQL text, so preparing it again each time
        // costs no round trip.
        Connection connection = GuardedSession.unguarded(transaction).getConnection();
        try (PreparedStatement claim = connection.prepareStatement(claimSql)) {
          bind(claim, 1, consumerGroup, key, keySource, fingerprint);
          if (restoreLockTimeout) {
            Answer at = answerAt(claim, claimResultSet());
            if (at == null) {
              throw new SQLException("the claim of key '" + key + "' returned no result set for the claim");
            }
            answer = at;
          } else {
            try (ResultSet row = claim.executeQuery()) {
              answer = read(row);
            }
          }
        }
      } catch (SQLException e) {
        throw mapped(new PersistenceException("Error querying database (the claim of key '" + key
            + "' in processed-events table " + table.qualified() + "). Cause: " + e, e),
            "key '" + key + "'");
      }
    }
    if (open != null && (restoreLockTimeout || dialect == Dialect.MARIADB)) {
      // MariaDB's SET STATEMENT … FOR bounds the claim alone anyway
      open.lockTimeoutRestored();
    }
    ClaimResult result = decide(transaction, answer, consumerGroup, key, fingerprint);
    if (open != null) {
      open.answered(result);
    }
    return result;
  }

  /**
   * MariaDB's claim: the INSERT alone (one round trip) — inserted; or, when it fails with a
   * duplicate key (1062, which InnoDB rolls back alone, leaving the transaction usable and a shared
   * lock on the existing row), the stored fingerprint read with a locking read (a second round
   * trip, on the duplicate path only). A 1062 whose row the read cannot find came from another
   * unique index than the key's: thrown, never taken for a duplicate.
   */
  private Answer insert(
      SqlSession transaction, String consumerGroup, String key, String keySource, byte[] fingerprint) {
    Connection connection = GuardedSession.unguarded(transaction).getConnection();
    try (PreparedStatement claim = connection.prepareStatement(claimSql)) {
      claim.setString(1, consumerGroup);
      claim.setString(2, key);
      claim.setString(3, keySource);
      claim.setBytes(4, fingerprint);
      int inserted = claim.executeUpdate();
      if (inserted != 1) {
        // no row and no error (nothing InnoDB does; a storage engine that discards rows): the
        // start-up probe refuses such a table, as on PostgreSQL
        return new Answer(false, 0, true, null, true);
      }
      return new Answer(true, 0, true, null);
    } catch (SQLException e) {
      if (e.getErrorCode() != Dialect.ER_DUP_ENTRY) {
        throw mapped(new PersistenceException("Error updating database (the claim of key '" + key
            + "' in processed-events table " + table.qualified() + "). Cause: " + e, e),
            "key '" + key + "'");
      }
      Map<String, Object> params = new HashMap<>();
      params.put("consumerGroup", consumerGroup);
      params.put("key", key);
      byte[] stored;
      try {
        stored = transaction.selectOne(fingerprintStatement, params);
      } catch (RuntimeException read) {
        throw mapped(read, "key '" + key + "'");
      }
      if (stored == null) {
        throw new PersistenceException("the claim of key '" + key + "' in processed-events table "
            + table.qualified() + " failed with a duplicate key in another unique index than"
            + " (consumer_group, idempotency_key): " + e.getMessage(), e);
      }
      return new Answer(false, 0, true, stored);
    }
  }

  private ClaimResult decide(
      SqlSession transaction, Answer answer, String consumerGroup, String key, byte[] fingerprint) {
    if (answer.inserted()) {
      OpenTransaction open = GuardedSession.transactionOf(transaction);
      if (open != null) {
        open.claimed(answer.txid(), consumerGroup, key);
      }
      return ClaimResult.CLAIMED;
    }
    if (answer.discarded()) {
      // MariaDB: the INSERT reported no row and no error (a trigger that discarded it)
      return ClaimResult.DUPLICATE;
    }
    if (answer.answered()) {
      return compare(answer.stored(), fingerprint);
    }
    // The claim waited for a racing transaction that committed the key (its snapshot predates
    // the wait), or the row was purged in between: read again with a new snapshot.
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", consumerGroup);
    params.put("key", key);
    return compare(transaction.selectOne(fingerprintStatement, params), fingerprint);
  }

  /**
   * What the claim statement returned: the key inserted (with the claiming transaction's 64-bit
   * id), or the stored fingerprint of an existing marker, or no row at all ({@code answered}
   * false: it waited for a racing transaction that committed the key, or the row was purged).
   */
  record Answer(boolean inserted, long txid, boolean answered, byte @Nullable [] stored, boolean discarded) {
    Answer(boolean inserted, long txid, boolean answered, byte @Nullable [] stored) {
      this(inserted, txid, answered, stored, false);
    }
  }

  /**
   * The claim's SQL text, {@link #CLAIM_PARAMETERS} as {@code ?}; columns: inserted, txid, stored.
   * With {@link #SAVE_LOCK_TIMEOUT} before it and {@link #RESTORE_LOCK_TIMEOUT} after it when the
   * store restores the lock timeout: the claim's rows are then its second result set ({@link
   * #claimResultSet()}).
   */
  String sql() {
    return claimSql;
  }

  /** Which result set of {@link #sql()} holds the claim's rows: 1, or 2 after {@link #SAVE_LOCK_TIMEOUT}. */
  int claimResultSet() {
    return restoreLockTimeout ? 2 : 1;
  }

  /**
   * Executes {@code statement} (several statements, one round trip) and reads the claim's answer
   * from its {@code n}th result set; {@code null} when it has fewer.
   */
  static @Nullable Answer answerAt(PreparedStatement statement, int n) throws SQLException {
    Answer answer = null;
    int resultSets = 0;
    boolean isResultSet = statement.execute();
    while (isResultSet || statement.getUpdateCount() != -1) {
      if (isResultSet && ++resultSets == n) {
        try (ResultSet rows = statement.getResultSet()) {
          answer = read(rows);
        }
      }
      isResultSet = statement.getMoreResults();
    }
    return answer;
  }

  /** Binds the claim's parameters to {@code statement} from index {@code first} on (7 of them). */
  void bind(PreparedStatement statement, int first, String consumerGroup, String key, String keySource,
      byte[] fingerprint) throws SQLException {
    statement.setString(first, consumerGroup);
    statement.setString(first + 1, key);
    statement.setString(first + 2, keySource);
    statement.setBytes(first + 3, fingerprint);
    statement.setString(first + 4, lockTimeout);
    statement.setString(first + 5, consumerGroup);
    statement.setString(first + 6, key);
  }

  /** Reads the claim statement's result. */
  static Answer read(ResultSet row) throws SQLException {
    if (!row.next()) {
      return new Answer(false, 0, false, null);
    }
    if (row.getBoolean(1)) {
      return new Answer(true, row.getLong(2), true, null);
    }
    return new Answer(false, 0, true, row.getBytes(3));
  }

  /**
   * Runs the claim statement {@code statement}, turning a lock timeout and PostgreSQL's requests
   * for a retry into {@link TransactionRetryException}.
   *
   * @param what the claimed key(s), for the message
   */
  private List<Map<String, Object>> select(
      SqlSession transaction, String statement, Map<String, Object> params, String what) {
    try {
      return transaction.selectList(statement, params);
    } catch (RuntimeException e) {
      throw mapped(e, what);
    }
  }

  /** Runs {@code sql} (no parameters) on the transaction's own connection, failures as a claim's. */
  private void execute(SqlSession transaction, String sql, String what) {
    try (PreparedStatement statement = GuardedSession.unguarded(transaction).getConnection().prepareStatement(sql)) {
      statement.execute();
    } catch (SQLException e) {
      throw mapped(new PersistenceException("Error querying database (the claim of " + what
          + " in processed-events table " + table.qualified() + "). Cause: " + e, e), what);
    }
  }

  /**
   * What a failed claim of {@code what} throws: a lock timeout (55P03) and PostgreSQL's requests
   * for a retry (40001, 40P01) become a {@link TransactionRetryException}; anything else is {@code
   * e} itself, which {@link FailureClassifier} classifies.
   */
  private RuntimeException mapped(RuntimeException e, String what) {
    if (dialect == Dialect.MARIADB) {
      SQLException ranOut = Dialect.find(e, dialect::lockWaitRanOut);
      if (ranOut != null) {
        return new TransactionRetryException("the claim of " + what + " waited longer than the"
            + " claim lock timeout (innodb_lock_wait_timeout " + lockTimeout + " s) behind another"
            + " transaction holding the same key (" + dialect.describe(ranOut) + "): "
            + TransientFailures.rootMessage(e), e);
      }
      SQLException retry = Dialect.find(e, dialect::asksForRetry);
      if (retry != null) {
        return new TransactionRetryException("MariaDB asked for the transaction to be retried ("
            + dialect.describe(retry) + ") during the claim of " + what + ": "
            + TransientFailures.rootMessage(e), e);
      }
      return e;
    }
    String state = TransientFailures.sqlState(e);
    if (LOCK_NOT_AVAILABLE.equals(state)) {
      return new TransactionRetryException("the claim of " + what + " waited longer than the"
          + " claim lock timeout (" + lockTimeout + ") behind another transaction holding the same"
          + " key: " + TransientFailures.rootMessage(e), e);
    }
    if (QUERY_CANCELED.equals(state)) {
      // a statement_timeout shorter than the claim lock timeout ends the same wait first: a lock
      // wait like 55P03, never an outage (the database answered)
      return new TransactionRetryException("the claim of " + what + " was cancelled (SQLSTATE"
          + " 57014: statement_timeout shorter than the claim lock timeout " + lockTimeout + "?)"
          + " while it waited: " + TransientFailures.rootMessage(e), e);
    }
    if (state != null && TransientFailures.RETRY_TRANSACTION.contains(state)) {
      return new TransactionRetryException("PostgreSQL asked for the transaction to be retried"
          + " (SQLSTATE " + state + ") during the claim of " + what + ": "
          + TransientFailures.rootMessage(e), e);
    }
    return e;
  }

  /** The index of {@code key}'s first occurrence in the batch (every key of the batch is in {@code firsts}). */
  private static int first(Map<KeyOf, Integer> firsts, KeyOf key) {
    Integer index = firsts.get(key);
    if (index == null) {
      throw new IllegalStateException("key " + key + " is not in the batch");
    }
    return index;
  }

  /**
   * The multi-row claim ({@link io.idem.spi.ProcessedEventStore#claimAll}): one statement for the
   * distinct keys, sorted by (group, key) so that two batches sharing keys lock them in the same
   * order (no deadlock between them on the markers), passed as PostgreSQL arrays; "new" decided
   * from the keys the INSERT returned. Keys answered neither as inserted nor with a stored
   * fingerprint — a racing transaction committed them while the statement waited — are read again
   * in one more statement, as {@link #claim} does for one key. A key repeated in the input is
   * decided by its first occurrence; the later ones are compared with the marker it left. Records
   * the transaction id and the keys inserted in the session's {@link OpenTransaction} for the
   * commit check. On MariaDB: {@link #claimAllMariaDb}, with the same answers.
   *
   * @param keys validated keys, not empty
   * @param fingerprints 32 bytes each, parallel to {@code keys}
   * @return answers parallel to {@code keys}
   * @throws TransactionRetryException the wait for one key ran out of the lock timeout (55P03),
   *     or PostgreSQL asked for a retry (40001, 40P01)
   * @throws RuntimeException (MyBatis' PersistenceException, or an {@link SQLException} wrapped)
   *     on any other database failure
   */
  List<ClaimResult> claimAll(SqlSession transaction, List<IdempotencyKey> keys, List<byte[]> fingerprints) {
    TreeMap<KeyOf, Integer> firsts = new TreeMap<>();
    for (int i = 0; i < keys.size(); i++) {
      firsts.putIfAbsent(KeyOf.of(keys.get(i)), i);
    }
    if (mariaDbBatch != null) {
      return claimAllMariaDb(mariaDbBatch, transaction, keys, fingerprints, firsts);
    }
    List<KeyOf> distinct = new ArrayList<>(firsts.keySet());
    Map<String, Object> params = arrays(transaction, distinct);
    params.put("sources", array(transaction, "text",
        distinct.stream().map(k -> keys.get(first(firsts, k)).source().name()).toArray(String[]::new)));
    params.put("fingerprints", array(transaction, "bytea",
        distinct.stream().map(k -> fingerprints.get(first(firsts, k))).toArray(byte[][]::new)));
    params.put("lockTimeout", lockTimeout);
    String what = distinct.size() + " keys (one batch)";
    if (restoreLockTimeout) {
      // the batch claim is a mapped statement: the saving and the restoring cost a round trip each
      execute(transaction, SAVE_LOCK_TIMEOUT, what);
    }
    List<Map<String, Object>> rows = select(transaction, claimAllStatement, params, what);
    if (restoreLockTimeout) {
      execute(transaction, RESTORE_LOCK_TIMEOUT, what);
    }
    Set<KeyOf> inserted = new HashSet<>();
    Map<KeyOf, byte[]> stored = new HashMap<>();
    OpenTransaction open = GuardedSession.transactionOf(transaction);
    for (Map<String, Object> row : rows) {
      KeyOf k = new KeyOf(Rows.required(row, "consumerGroup", String.class), Rows.required(row, "key", String.class));
      if (Boolean.TRUE.equals(row.get("inserted"))) {
        inserted.add(k);
        if (open != null) {
          open.claimed(Rows.requiredLong(row, "txid"), k.group(), k.value());
        }
      } else {
        stored.put(k, (byte[]) row.get("stored"));
      }
    }
    if (open != null && restoreLockTimeout) {
      open.lockTimeoutRestored();
    }
    List<KeyOf> waitedFor = distinct.stream()
        .filter(k -> !inserted.contains(k) && !stored.containsKey(k)).toList();
    if (!waitedFor.isEmpty()) {
      // They waited for racing transactions that committed them (the statement's snapshot
      // predates the wait), or were purged in between: read again with a new snapshot.
      for (Map<String, Object> row : transaction.<Map<String, Object>>selectList(
          fingerprintsStatement, arrays(transaction, waitedFor))) {
        stored.put(new KeyOf(Rows.required(row, "consumerGroup", String.class), Rows.required(row, "key", String.class)),
            (byte[]) row.get("stored"));
      }
    }
    return results(keys, fingerprints, firsts, inserted, stored);
  }

  /**
   * The answers parallel to {@code keys}: a key's first occurrence claimed when {@code inserted}
   * holds it, a later occurrence compared with the first's fingerprint; any other key compared with
   * the fingerprint {@code stored}.
   */
  private static List<ClaimResult> results(List<IdempotencyKey> keys, List<byte[]> fingerprints,
      Map<KeyOf, Integer> firsts, Set<KeyOf> inserted, Map<KeyOf, byte[]> stored) {
    List<ClaimResult> results = new ArrayList<>(keys.size());
    for (int i = 0; i < keys.size(); i++) {
      KeyOf k = KeyOf.of(keys.get(i));
      int first = first(firsts, k);
      if (inserted.contains(k)) {
        results.add(first == i ? ClaimResult.CLAIMED : compare(fingerprints.get(first), fingerprints.get(i)));
      } else {
        results.add(compare(stored.get(k), fingerprints.get(i)));
      }
    }
    return results;
  }

  /**
   * MariaDB's multi-key claim ({@link MariaDbBatchClaim}): the distinct keys in (group, key) order,
   * each first occurrence's source and fingerprint; a key repeated in the input compared with its
   * first occurrence (a duplicate or a conflict of it), as on PostgreSQL. Records each key inserted
   * in the session's {@link OpenTransaction} (as {@link #claim} does: no transaction id on
   * MariaDB), that the claim lock timeout bounded the claim alone, and — for the commit — the
   * answer {@link #claim} would have left last had each key been claimed on its own (the first
   * occurrences in key order, then the repeats in input order).
   */
  private List<ClaimResult> claimAllMariaDb(MariaDbBatchClaim batch, SqlSession transaction,
      List<IdempotencyKey> keys, List<byte[]> fingerprints, TreeMap<KeyOf, Integer> firsts) {
    List<KeyOf> distinct = new ArrayList<>(firsts.keySet());
    List<MariaDbBatchClaim.Row> rows = new ArrayList<>(distinct.size());
    for (KeyOf k : distinct) {
      int first = first(firsts, k);
      rows.add(new MariaDbBatchClaim.Row(k.group(), k.value(), keys.get(first).source().name(),
          fingerprints.get(first)));
    }
    OpenTransaction open = GuardedSession.transactionOf(transaction);
    MariaDbBatchClaim.Found found;
    try {
      found = batch.claim(transaction, rows, row -> {
        if (open != null) {
          open.claimed(0, row.consumerGroup(), row.key());
        }
      });
    } catch (RuntimeException e) {
      throw mapped(e, distinct.size() + " keys (one batch)");
    }
    Set<KeyOf> inserted = new HashSet<>();
    Map<KeyOf, byte[]> stored = new HashMap<>();
    for (int i = 0; i < distinct.size(); i++) {
      if (found.inserted()[i]) {
        inserted.add(distinct.get(i));
      } else {
        stored.put(distinct.get(i), found.stored()[i]);
      }
    }
    List<ClaimResult> results = results(keys, fingerprints, firsts, inserted, stored);
    if (open != null) {
      open.lockTimeoutRestored();
      int last = firsts.lastEntry().getValue();
      for (int i = keys.size() - 1; i >= 0; i--) {
        if (first(firsts, KeyOf.of(keys.get(i))) != i) {
          last = i;
          break;
        }
      }
      open.answered(results.get(last));
    }
    return results;
  }

  /** {@code groups} and {@code keys} of {@code distinct} as PostgreSQL text arrays. */
  private static Map<String, Object> arrays(SqlSession transaction, List<KeyOf> distinct) {
    Map<String, Object> params = new HashMap<>();
    params.put("groups", array(transaction, "text", distinct.stream().map(KeyOf::group).toArray(String[]::new)));
    params.put("keys", array(transaction, "text", distinct.stream().map(KeyOf::value).toArray(String[]::new)));
    return params;
  }

  private static java.sql.Array array(SqlSession transaction, String type, Object[] elements) {
    try {
      return transaction.getConnection().createArrayOf(type, elements);
    } catch (SQLException e) {
      throw new IllegalStateException("could not build a " + type + "[] parameter for the claim: " + e, e);
    }
  }

  /** A key's identity in the table, ordered by group, then value (the locking order). */
  record KeyOf(String group, String value) implements Comparable<KeyOf> {
    static KeyOf of(IdempotencyKey key) {
      return new KeyOf(key.consumerGroup(), key.value());
    }

    @Override
    public int compareTo(KeyOf other) {
      int byGroup = group.compareTo(other.group);
      return byGroup != 0 ? byGroup : value.compareTo(other.value);
    }
  }

  private static ClaimResult compare(byte @Nullable [] stored, byte[] fingerprint) {
    if (stored == null) {
      // Purged meanwhile; the conflicting row is gone, so there is nothing to compare with.
      // Report a duplicate rather than apply twice within the retention window.
      return ClaimResult.DUPLICATE;
    }
    return Arrays.equals(stored, fingerprint) ? ClaimResult.DUPLICATE : ClaimResult.CONFLICT;
  }
}
