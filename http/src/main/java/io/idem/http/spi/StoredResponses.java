package io.idem.http.spi;

import io.idem.IdempotencyKey;
import io.idem.StoreUnavailableException;
import org.jspecify.annotations.Nullable;

/**
 * Where an Idempotency-Key endpoint keeps the first response of each key, beside the store's
 * processed-events marker: written in the transaction that claimed the key (so it commits with
 * the marker and the business write, or not at all) and read for every repeat of the key.
 *
 * <p>Implementations are thread-safe; a transaction context {@code C} is confined to the thread
 * running the work, as for {@link io.idem.spi.ProcessedEventStore}.
 *
 * @param <C> the store's transaction context ({@code SqlSession} for store-jdbc)
 */
public interface StoredResponses<C> {

  /**
   * Called in the claiming transaction right after the claim and before the endpoint's handler
   * runs. A store-jdbc store built without {@code restoreLockTimeoutAfterClaim} keeps the claim's
   * lock timeout for the transaction, and it would bound the handler's own lock waits too; {@code
   * JdbcStoredResponses} then sets it back to the connection's default here ({@code SET LOCAL
   * lock_timeout TO DEFAULT}, one round trip) so that only the claim answers "in flight" quickly
   * (nothing when the claim restored it itself). The default does nothing.
   *
   * @throws RuntimeException when the database refused; the request then fails (rolled back)
   */
  default void beforeHandler(C transaction) {}

  /**
   * Stores {@code response} for {@code key} inside {@code transaction}, the one that claimed the
   * key: nothing is visible before it commits, and nothing is left when it rolls back. It may be
   * sent with the COMMIT rather than at once ({@code JdbcStoredResponses} on PostgreSQL): a failure
   * then fails the transaction at its commit, all or nothing.
   *
   * @throws RuntimeException on any database failure; the request then fails (rolled back), so a
   *     response is never committed without its marker nor a marker without its response
   */
  void save(C transaction, IdempotencyKey key, StoredResponse response);

  /**
   * The response stored for {@code key}, read outside any business transaction; {@code null} when
   * there is none (never stored, or deleted with its marker).
   *
   * @throws StoreUnavailableException when the database cannot be reached
   * @throws RuntimeException on any other database failure
   */
  @Nullable StoredResponse find(IdempotencyKey key);

  /**
   * A store that keeps nothing, for endpoints whose answer does not depend on the request (the
   * webhook receiver): {@link #save} does nothing and {@link #find} answers {@code null}.
   */
  static <C> StoredResponses<C> none() {
    return new StoredResponses<>() {
      @Override
      public void save(C transaction, IdempotencyKey key, StoredResponse response) {}

      @Override
      public @Nullable StoredResponse find(IdempotencyKey key) {
        return null;
      }

      @Override
      public String toString() {
        return "StoredResponses.none()";
      }
    };
  }
}
