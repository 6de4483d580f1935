package io.idem.spi;

import io.idem.IdempotencyKey;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A run of per-message transactions made one after the other by one thread — the records of one
 * Kafka partition in per-message mode — opened by {@link ProcessedEventStore#openRun()}. Each
 * {@link #inTransaction} call is one transaction with exactly the meaning of {@link
 * ProcessedEventStore#inTransaction} (its own commit, its own failure classification, the same
 * guarantee). What a run adds is a hint: just before a transaction commits, the store may ask
 * {@code next} which key the following transaction will claim, begin that transaction and send its
 * claim in the same round trip as this COMMIT (store-jdbc: a new message then costs two round
 * trips instead of three, a duplicate one instead of two). The transaction begun that way is
 * carried to the next {@link #inTransaction} call of the run, which uses it when it is for the
 * same key and fingerprint and rolls it back otherwise.
 *
 * <p>Nothing a carried transaction did is committed unless the next call's work claims that key
 * and commits: it holds an uncommitted marker (and its row lock) until then, so a run must be
 * {@link #close() closed} as soon as the caller stops calling it (try-with-resources), and a caller
 * must never run anything between two calls that could wait for the next key on another
 * connection.
 *
 * <p>Not thread-safe: a run belongs to the thread that opened it.
 *
 * @param <C> the transaction context
 */
public interface TransactionRun<C> extends AutoCloseable {

  /**
   * Runs {@code work} in a transaction of its own, as {@link ProcessedEventStore#inTransaction}
   * does, with the same exceptions. {@code key} and {@code payloadFingerprint} name the claim the
   * work makes first (a transaction carried from the previous call is used only for that claim).
   *
   * @param next asked at most once, only when the work succeeded and the transaction is about to
   *     commit: the claim of the next call, or {@code null} when there is none (the run ends, or the
   *     next message has no key); a supplier that throws counts as {@code null}
   */
  <T> T inTransaction(
      TransactionWork<C, T> work,
      IdempotencyKey key,
      byte[] payloadFingerprint,
      Supplier<@Nullable NextClaim> next)
      throws Exception;

  /**
   * Rolls back and releases a transaction carried from the last call, if any (one round trip).
   * Never throws; idempotent.
   */
  @Override
  void close();
}
