package io.idem.spi;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

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
   * Opens a {@link TransactionRun}: per-message transactions made one after the other by the
   * calling thread, in which the store may begin each next transaction, and send its claim, in the
   * round trip of the previous COMMIT. Close it when the run ends (try-with-resources).
   *
   * <p>The default runs every transaction of the run with {@link #inTransaction} and ignores the
   * hints, so a store that does not override it behaves exactly as without a run.
   */
  default TransactionRun<C> openRun() {
    return new TransactionRun<>() {
      @Override
      public <T> T inTransaction(
          TransactionWork<C, T> work,
          IdempotencyKey key,
          byte[] payloadFingerprint,
          Supplier<@Nullable NextClaim> next)
          throws Exception {
        return ProcessedEventStore.this.inTransaction(work);
      }

      @Override
      public void close() {}
    };
  }

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
   * Claims several keys inside {@code transaction} — the multi-row claim of batch mode
   * ({@link io.idem.IdempotentConsumer#processBatch}) — with the same meaning, key by key, as
   * {@link #claim}: each answer is decided from what the database really inserted, never from a
   * caught unique violation, and a key held by another open transaction waits for it (then
   * {@link ClaimResult#DUPLICATE} or {@link ClaimResult#CONFLICT} if it committed, {@link
   * ClaimResult#CLAIMED} if it rolled back).
   *
   * <p><b>Shape.</b> The answer is parallel to the input: element {@code i} is the answer for
   * {@code keys.get(i)}, whose fingerprint is {@code payloadFingerprints.get(i)}. When the same
   * key (same consumer group and value) appears more than once, its first occurrence decides;
   * every later one is compared with the marker as the first left it — {@link
   * ClaimResult#DUPLICATE} when its fingerprint equals the marker's (the first occurrence's own
   * when that one was {@link ClaimResult#CLAIMED}), {@link ClaimResult#CONFLICT} otherwise —
   * exactly as a {@link #claim} of that key later in the same transaction would answer. An empty
   * list gives an empty list.
   *
   * <p><b>Atomicity.</b> Nothing is committed here: the markers become visible to others when
   * {@code transaction} commits, all together, and disappear together when it rolls back. When
   * this method throws, some markers may already be inserted in {@code transaction}: the caller
   * must roll it back (the pipeline always does, by throwing out of {@link #inTransaction}).
   * A store may insert the keys in an order of its own (store-jdbc sorts them, so that two
   * batches sharing keys lock them in the same order and do not deadlock on them); the answers
   * do not depend on that order.
   *
   * <p><b>Waiting.</b> Each key held by another open transaction is waited for, as {@link #claim}
   * waits, and a store that bounds the wait (a lock timeout) bounds each wait on its own, so a
   * batch can wait up to that bound once per contended key.
   *
   * <p><b>Threads.</b> Thread-safe as far as the store goes; {@code transaction} belongs to the
   * calling thread, like every transaction context.
   *
   * <p>The default calls {@link #claim} once per key, in order, so it costs a round trip per key
   * on a database store; a store that can claim many keys in one statement should override it
   * (store-jdbc: one round trip for the whole list, a second one only after a racing transaction
   * committed one of the keys during the wait).
   *
   * @param transaction the context of the surrounding {@link #inTransaction} call
   * @param keys the keys to claim, in the batch's order; not {@code null}, no {@code null}
   *     element
   * @param payloadFingerprints SHA-256 of each payload, 32 bytes each, parallel to {@code keys}
   * @return one answer per key, parallel to {@code keys}; a new list the caller may keep
   * @throws IllegalArgumentException when the lists differ in size or a fingerprint is not 32
   *     bytes
   * @throws TransactionRetryException when the database asked for a retry (SQLSTATE 40001,
   *     40P01) or the wait for another transaction's lock on one of the keys timed out: the whole
   *     transaction must be rolled back and retried
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure; the transaction must then be rolled
   *     back, and the pipeline treats it as the store's failure (never the messages')
   */
  default List<ClaimResult> claimAll(
      C transaction, List<IdempotencyKey> keys, List<byte[]> payloadFingerprints) {
    if (keys.size() != payloadFingerprints.size()) {
      throw new IllegalArgumentException("keys and payloadFingerprints must have the same size, but"
          + " had " + keys.size() + " and " + payloadFingerprints.size());
    }
    List<ClaimResult> results = new ArrayList<>(keys.size());
    for (int i = 0; i < keys.size(); i++) {
      results.add(claim(transaction, keys.get(i), payloadFingerprints.get(i)));
    }
    return results;
  }

  /**
   * Confirms, after the handler ran and before the commit, that {@code transaction} still holds
   * the claim of {@code key}: the handler may have swallowed a database error (on PostgreSQL the
   * transaction is then aborted, and its commit silently rolls back) or ended the transaction
   * itself. The default does nothing; stores whose commit can report success without committing
   * must check, here or as part of the commit in {@link #inTransaction} (store-jdbc checks the
   * driver's transaction state here, with no round trip, and the transaction id in the same round
   * trip as the COMMIT).
   *
   * <p>A naturally idempotent pipeline ({@code IdempotentConsumer.Builder#naturallyIdempotent})
   * claims nothing and still calls this after each handler: the store should then check only that
   * the transaction is still open and healthy (store-jdbc does on pgjdbc; on another driver, which
   * it confirms by reading the marker, every message fails and is retried, never acked).
   *
   * @throws RuntimeException when the claim is no longer held; the pipeline then treats the
   *     message as a handler failure (rolled back, retried or dead-lettered), never as processed
   */
  default void confirmClaim(C transaction, IdempotencyKey key) {}

  /**
   * {@link #confirmClaim} for several keys at once: the pipeline calls it once after a batch
   * handler ({@link io.idem.IdempotentConsumer.Builder#batchHandler}) ran for the claimed messages
   * of a batch, instead of one {@link #confirmClaim} per key. Same meaning, key by key: it throws
   * when {@code transaction} no longer holds the claim of any one of {@code keys}, and the whole
   * transaction is then rolled back (the pipeline redoes the batch message by message, where each
   * message's own check decides). A store may check every key with one statement, or — like
   * {@link #confirmClaim} — as part of the commit in {@link #inTransaction}.
   *
   * <p>The default calls {@link #confirmClaim} once per key, in order (store-jdbc on pgjdbc: the
   * driver's transaction state, no round trip; on MariaDB store-jdbc checks the keys with one
   * statement, sent with the COMMIT in the transactions it opens itself).
   *
   * @param transaction the context of the surrounding {@link #inTransaction} call
   * @param keys the keys the transaction claimed and handled, in the batch's order; not {@code
   *     null}, no {@code null} element, distinct; an empty list checks nothing
   * @throws RuntimeException when one of the claims is no longer held, as {@link #confirmClaim}
   */
  default void confirmClaims(C transaction, List<IdempotencyKey> keys) {
    for (IdempotencyKey key : keys) {
      confirmClaim(transaction, key);
    }
  }

  /**
   * Whether {@link #confirmClaim} can check a transaction that claimed nothing: a naturally
   * idempotent pipeline ({@code IdempotentConsumer.Builder#naturallyIdempotent}) writes no marker
   * and still calls {@link #confirmClaim} after each handler, so a store that confirms by reading
   * the marker would fail every such message, for ever. {@code IdempotentConsumer.Builder#build}
   * refuses the option with a store that answers {@code false}.
   *
   * <p>The default answers {@code true}, since the default {@link #confirmClaim} checks nothing.
   * store-jdbc answers {@code true} on PostgreSQL (pgjdbc's transaction state, no marker read) and
   * {@code false} on MariaDB (it counts the markers with the COMMIT: docs/STORE.md, "Databases").
   * Constant for a store instance; thread-safe.
   */
  default boolean confirmsWithoutMarkers() {
    return true;
  }

  /**
   * Records, in its own short transaction committed before the adapter stores the dead-letter
   * copy, that the message of {@code key} is being dead-lettered for {@code decision}: the key's
   * marker is written with that outcome (docs/STORE.md, "Dead-letter decisions"), so that when the
   * original comes back because the process died (or the offset commit failed) after the copy and
   * before the original was removed, {@link #deadLetterDecision} settles it without running the
   * handler. The marker holds {@link DeadLetterDecision#markerFingerprint()} instead of the
   * payload's fingerprint, so that every later {@link #claim} (and {@link #claimAll}) of the key
   * answers {@link ClaimResult#CONFLICT} whatever the payload — the pipeline asks {@link
   * #deadLetterDecision} only after a CONFLICT, so a duplicate costs nothing more — while {@link
   * #isProcessed} stays {@code false}; retention purges it like any marker. A marker of a processed key is never
   * changed (the key was applied meanwhile, by another instance). The key's attempt count ({@link
   * #startAttempt}) is removed in the same transaction, so that a replay starts with a fresh count.
   *
   * <p>The default records nothing and returns {@code false}: a redelivery after such a crash is
   * then processed again (the handler runs, and a second copy may be stored).
   *
   * @param key the key of the message being dead-lettered
   * @param decision the reason and the delivery's broker id
   * @return whether the decision is recorded
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure
   */
  default boolean recordDeadLetter(IdempotencyKey key, DeadLetterDecision decision) {
    return false;
  }

  /**
   * The dead-letter decision {@link #recordDeadLetter} recorded for {@code key}, read outside any
   * business transaction (the pipeline asks after a claim answered {@link ClaimResult#CONFLICT});
   * {@code null} when the key's marker is a processed one or there
   * is none. The default returns {@code null}.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure
   */
  default @Nullable DeadLetterDecision deadLetterDecision(IdempotencyKey key) {
    return null;
  }

  /**
   * Removes the dead-letter marker of {@code key} recorded for the delivery {@code
   * brokerMessageId} (as {@link DeadLetterDecision#brokerMessageId()} says), in its own short
   * transaction, so that a new message with that key (a replay from the dead-letter destination) is
   * claimed and processed anew. A processed marker, or a decision recorded since for another
   * delivery, is left alone; the key's attempt count ({@link #startAttempt}) is removed too. The
   * default removes nothing and returns {@code false}.
   *
   * @return whether a marker was removed
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure
   */
  default boolean releaseDeadLetter(IdempotencyKey key, @Nullable String brokerMessageId) {
    return false;
  }

  /**
   * Counts one more handler run of the message of {@code key} that the broker's own delivery
   * counter may not account for (docs/FAILURES.md, "Attempts that survive the process"), in a
   * short transaction of its own, committed before this returns — so that when the process dies
   * during the handler (the JVM halted, killed, out of memory), the next delivery still finds the
   * count. The pipeline calls it only for deliveries whose adapter reports {@link
   * io.idem.InboundMessage#unaccountedRedelivery()}, never for a first delivery.
   *
   * <p>A store keeps one count per key (consumer group and value), from 1, with when it was last
   * started. The count is removed by {@link #clearAttempts} (in the transaction that applied the
   * message), by {@link #recordDeadLetter} and {@link #releaseDeadLetter} (a replayed dead letter
   * starts afresh), and by retention like a marker.
   *
   * <p>The default keeps no count and returns {@code 0}: the pipeline then counts only what the
   * broker (and the adapter, in memory) counts, and a message that kills the process may loop.
   *
   * @param key the key whose handler is about to run
   * @return the number of such runs of {@code key} counted so far, this one included: 1 the first
   *     time, or {@code 0} when the store keeps no counts
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws TransactionRetryException when the database asked for a retry (a lock timeout on the
   *     key's count, a serialization failure)
   * @throws RuntimeException on any other database failure
   */
  default int startAttempt(IdempotencyKey key) {
    return 0;
  }

  /**
   * Removes the count {@link #startAttempt} kept for {@code key}, inside {@code transaction} (the
   * one that applies the message, or finds it a duplicate): it disappears exactly when the
   * message's effect commits, and stays when that transaction rolls back. A key without a count is
   * no error. The default does nothing.
   *
   * @param transaction the context of the surrounding {@link #inTransaction} call
   * @param key the key whose count is removed
   * @throws TransactionRetryException when the database asked for a retry
   * @throws RuntimeException on any other database failure; the transaction must then be rolled
   *     back, and the pipeline treats it as the store's failure
   */
  default void clearAttempts(C transaction, IdempotencyKey key) {}

  /**
   * Deletes at most {@code maxRows} markers processed before {@code processedBefore}, and at most
   * {@code maxRows} attempt counts ({@link #startAttempt}) last started before it, in its own
   * short transaction.
   *
   * @param processedBefore exclusive upper bound on {@code processed_at} (and on an attempt
   *     count's last start)
   * @param maxRows batch size, at least 1
   * @return the larger of the numbers of markers and of counts deleted; less than {@code maxRows}
   *     means none of either are left
   * @throws StoreUnavailableException when the database cannot be reached
   */
  int purge(Instant processedBefore, int maxRows);

  /**
   * Whether a committed marker of a processed message exists for {@code key} (a dead-letter
   * marker, {@link #recordDeadLetter}, is not one); for operations and tests, outside any
   * business transaction.
   *
   * @throws StoreUnavailableException when the database cannot be reached
   */
  boolean isProcessed(IdempotencyKey key);
}
