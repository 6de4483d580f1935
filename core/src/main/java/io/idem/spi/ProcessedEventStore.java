package io.idem.spi;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import java.time.Instant;

/**
 * Where processed-events markers live, and the transactions that hold them together with the
 * business writes. Implemented by {@code idem-store-jdbc}; every implementation must pass
 * {@code io.idem.testkit.ProcessedEventStoreCompatibilityKit}.
 *
 * <p>Implementations are thread-safe: many workers call {@link #inTransaction} at once, each on
 * its own transaction. A transaction context {@code C} is confined to the thread running the
 * work.
 *
 * @param <C> the transaction context handed to {@link io.idem.MessageHandler}s
 */
public interface ProcessedEventStore<C> {

  /**
   * Runs {@code work} in a new transaction: commits when it returns, rolls back when it throws.
   *
   * @return what {@code work} returned, once committed
   * @throws StoreUnavailableException after rolling back, when the database could not be reached,
   *     the connection broke, the commit failed (outcome unknown), or the database asked for a
   *     retry (serialization failure, deadlock) — whether the failure came from the store or from
   *     the work's own statements
   * @throws Exception after rolling back, whatever else {@code work} threw, unchanged
   */
  <T> T inTransaction(TransactionWork<C, T> work) throws Exception;

  /**
   * Inserts the processed-events marker for {@code key} inside {@code transaction}, deciding from
   * the database's own row count whether it is new. Must not abort the transaction on a
   * duplicate (on PostgreSQL: {@code INSERT … ON CONFLICT DO NOTHING}, never a caught unique
   * violation). When another open transaction holds the same key, blocks until it ends, then
   * returns {@link ClaimResult#DUPLICATE} (it committed) or {@link ClaimResult#CLAIMED} (it rolled
   * back).
   *
   * @param transaction the context of the surrounding {@link #inTransaction} call
   * @param key the key to claim
   * @param payloadFingerprint SHA-256 of the payload, 32 bytes; compared on a duplicate
   * @return whether the key was new, a duplicate, or a conflicting duplicate
   * @throws RuntimeException on any database failure; the transaction must then be rolled back
   */
  ClaimResult claim(C transaction, IdempotencyKey key, byte[] payloadFingerprint);

  /**
   * Confirms, after the handler ran and before the commit, that {@code transaction} still holds
   * the claim of {@code key}: the handler may have swallowed a database error (on PostgreSQL the
   * transaction is then aborted, and its commit silently rolls back) or ended the transaction
   * itself. The default does nothing; stores whose commit can report success without committing
   * must check.
   *
   * @throws RuntimeException when the claim is no longer held; the pipeline then treats the
   *     message as a handler failure (rolled back, retried or dead-lettered), never as processed
   */
  default void confirmClaim(C transaction, IdempotencyKey key) {}

  /**
   * Deletes at most {@code maxRows} markers processed before {@code processedBefore}, in its own
   * short transaction.
   *
   * @param processedBefore exclusive upper bound on {@code processed_at}
   * @param maxRows batch size, at least 1
   * @return the number of markers deleted; less than {@code maxRows} means none are left
   * @throws StoreUnavailableException when the database cannot be reached
   */
  int purge(Instant processedBefore, int maxRows);

  /**
   * Whether a committed marker exists for {@code key}; for operations and tests, outside any
   * business transaction.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   */
  boolean isProcessed(IdempotencyKey key);
}
