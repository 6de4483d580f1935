package io.idem.store.jdbc;

import io.idem.IdempotencyKey;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 * transaction.
 *
 * <p>Immutable and thread-safe; the session passed in belongs to the calling thread.
 */
final class ClaimStatement {
  /** SQLSTATE of a lock wait that ran out of {@code lock_timeout}. */
  private static final String LOCK_NOT_AVAILABLE = "55P03";

  private final String claimStatement;
  private final String fingerprintStatement;
  private final String lockTimeout;

  /**
   * @param namespace the table's mapper namespace ({@link ProcessedEventsMapper#register})
   * @param lockTimeout PostgreSQL's {@code lock_timeout} value for the claim, such as {@code 2000ms}
   */
  ClaimStatement(String namespace, String lockTimeout) {
    this.claimStatement = namespace + ".claim";
    this.fingerprintStatement = namespace + ".fingerprint";
    this.lockTimeout = lockTimeout;
  }

  /**
   * The claim itself, on values {@link IdempotencyKey} has validated — or on the values no real key
   * can have that {@link ClaimProbe} claims at build. Records the transaction id in the session's
   * {@link OpenTransaction} for the commit check.
   *
   * @throws TransactionRetryException the claim waited longer than the lock timeout (55P03), or
   *     PostgreSQL asked for a retry (40001 under REPEATABLE READ or SERIALIZABLE, 40P01)
   * @throws RuntimeException (MyBatis' PersistenceException) on any other database failure
   */
  ClaimResult claim(
      SqlSession transaction, String consumerGroup, String key, String keySource, byte[] fingerprint) {
    Map<String, Object> params = new HashMap<>();
    params.put("consumerGroup", consumerGroup);
    params.put("key", key);
    params.put("keySource", keySource);
    params.put("fingerprint", fingerprint);
    params.put("lockTimeout", lockTimeout);
    List<Map<String, Object>> rows;
    try {
      rows = transaction.selectList(claimStatement, params);
    } catch (RuntimeException e) {
      String state = TransientFailures.sqlState(e);
      if (LOCK_NOT_AVAILABLE.equals(state)) {
        throw new TransactionRetryException("the claim of key '" + key + "' waited longer than the"
            + " claim lock timeout (" + lockTimeout + ") behind another transaction holding the same"
            + " key: " + TransientFailures.rootMessage(e), e);
      }
      if (state != null && TransientFailures.RETRY_TRANSACTION.contains(state)) {
        throw new TransactionRetryException("PostgreSQL asked for the transaction to be retried"
            + " (SQLSTATE " + state + ") during the claim of key '" + key + "': "
            + TransientFailures.rootMessage(e), e);
      }
      throw e;
    }
    if (!rows.isEmpty()) {
      Map<String, Object> row = rows.get(0);
      if (Boolean.TRUE.equals(row.get("inserted"))) {
        OpenTransaction open = GuardedSession.transactionOf(transaction);
        if (open != null) {
          open.claimed(((Number) row.get("txid")).longValue(), consumerGroup, key);
        }
        return ClaimResult.CLAIMED;
      }
      return compare((byte[]) row.get("stored"), fingerprint);
    }
    // The claim waited for a racing transaction that committed the key (its snapshot predates
    // the wait), or the row was purged in between: read again with a new snapshot.
    return compare(transaction.selectOne(fingerprintStatement, params), fingerprint);
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
