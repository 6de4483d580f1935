package io.idem.spi;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
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
   * The store classifies every failure once, by who failed (docs/FAILURES.md):
   *
   * <ul>
   *   <li>{@link StoreUnavailableException} — the store's own connection cannot reach the
   *       database: a connection (or session) could not be opened, the pool timed out, or the
   *       transaction's connection broke and a fresh connection fails too. Decided from the
   *       store's own connections, never from a cause chain holding a socket exception.
   *   <li>{@link TransactionRetryException} — the database asked for the whole transaction to be
   *       retried (SQLSTATE 40001, 40P01), or {@link #claim} timed out waiting for another
   *       transaction's lock on the same key.
   *   <li>anything else {@code work} threw, unchanged — including the database rejecting the
   *       work's own statements (SQLSTATE classes 22, 23, 42, 2B, a trigger's {@code RAISE}, a lock
   *       timeout on the work's statement), a deferred constraint failing at COMMIT, and the server
   *       ending the session because the work was slow ({@code idle_in_transaction_session_timeout},
   *       {@code statement_timeout}) while a fresh connection works: the work's failure.
   * </ul>
   *
   * <p>A store must also never commit a claim without the work's effect: when the work ended the
   * transaction itself (for example a SQL-text {@code COMMIT}), the store detects that the
   * transaction that claimed the key is no longer the one running, rolls back, removes a marker
   * the work committed early, and throws (a failure of the work).
   *
   * @return what {@code work} returned, once committed
   * @throws StoreUnavailableException after rolling back, as above
   * @throws TransactionRetryException after rolling back, as above
   * @throws Exception after rolling back, whatever else {@code work} or the commit threw
   */
  <T> T inTransaction(TransactionWork<C, T> work) throws Exception;

  /**
   * Inserts the processed-events marker for {@code key} inside {@code transaction}, deciding from
   * the database's own row count whether it is new. Must not abort the transaction on a
   * duplicate (on PostgreSQL: {@code INSERT … ON CONFLICT DO NOTHING}, never a caught unique
   * violation). When another open transaction holds the same key, blocks until it ends, then
   * returns {@link ClaimResult#DUPLICATE} (it committed) or {@link ClaimResult#CLAIMED} (it rolled
   * back); a store may bound that wait (a lock timeout) and then throw
   * {@link TransactionRetryException}.
   *
   * @param transaction the context of the surrounding {@link #inTransaction} call
   * @param key the key to claim
   * @param payloadFingerprint SHA-256 of the payload, 32 bytes; compared on a duplicate
   * @return whether the key was new, a duplicate, or a conflicting duplicate
   * @throws TransactionRetryException when the database asked for a retry or the wait for another
   *     transaction's lock on the key timed out
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure; the transaction must then be rolled
   *     back, and the pipeline treats it as the store's failure (never the message's)
   */
  ClaimResult claim(C transaction, IdempotencyKey key, byte[] payloadFingerprint);

  /**
   * Confirms, after the handler ran and before the commit, that {@code transaction} still holds
   * the claim of {@code key}: the handler may have swallowed a database error (on PostgreSQL the
   * transaction is then aborted, and its commit silently rolls back) or ended the transaction
   * itself. The default does nothing; stores whose commit can report success without committing
   * must check, here or as part of the commit in {@link #inTransaction} (store-jdbc checks the
   * driver's transaction state here, with no round trip, and the transaction id in the same round
   * trip as the COMMIT).
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
