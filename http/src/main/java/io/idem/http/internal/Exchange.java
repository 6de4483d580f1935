package io.idem.http.internal;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What one request's run through the pipeline left: it is the pipeline's {@link Acknowledgement}
 * (which records what it was told — nothing goes to the client from here: the answer is written
 * after {@code process} returned, so never before the commit), the failure of the handler, and
 * the failure the pipeline retried on. The endpoint supplies {@link #inTransaction}, the work run
 * in the claiming transaction. Confined to the request's thread.
 *
 * @param <C> the store's transaction context
 */
public abstract class Exchange<C> implements Acknowledgement {
  private @Nullable Throwable handlerFailure;
  private @Nullable Throwable retryFailure;
  private @Nullable Duration retryDelay;
  private @Nullable DeadLetterReason deadLetter;
  private @Nullable IdempotencyKey key;

  /** The endpoint's work in the transaction that claimed {@code key}. */
  protected abstract void inTransaction(IdempotencyKey key, C transaction) throws Exception;

  /** Runs {@link #inTransaction}, remembering what it threw. */
  final void run(IdempotencyKey key, C transaction) throws Exception {
    try {
      inTransaction(key, transaction);
    } catch (Exception | Error e) {
      handlerFailure = e;
      throw e;
    }
  }

  /** Forgets the last run (before the pipeline is asked again). */
  void clearRun() {
    handlerFailure = null;
    retryFailure = null;
    retryDelay = null;
    deadLetter = null;
  }

  void retriedOn(Throwable failure) {
    retryFailure = failure;
  }

  void keyed(IdempotencyKey claimed) {
    key = claimed;
  }

  /**
   * The key as the pipeline claimed it (a value over 512 characters as {@code sha256:<hex>}), once
   * the pipeline keyed the request.
   */
  public @Nullable IdempotencyKey key() {
    return key;
  }

  /** What the handler (the endpoint's work) threw in the last run, if it threw. */
  public @Nullable Throwable handlerFailure() {
    return handlerFailure;
  }

  /** The failure the pipeline retried on in the last run (any retry outcome). */
  public @Nullable Throwable retryFailure() {
    return retryFailure;
  }

  /** The delay the pipeline asked for before a retry, if it asked for one. */
  public @Nullable Duration retryDelay() {
    return retryDelay;
  }

  /** The reason the pipeline dead-lettered with, if it did. */
  public @Nullable DeadLetterReason deadLetter() {
    return deadLetter;
  }

  /**
   * Whether the last run's retry was the claim's lock timeout (SQLSTATE 55P03; MariaDB's error
   * 1205, a lock wait past {@code innodb_lock_wait_timeout}): another request with the key is
   * still in its transaction.
   */
  public boolean claimTimedOut() {
    return retryFailure != null && ("55P03".equals(SqlFailures.sqlState(retryFailure))
        || SqlFailures.hasErrorCode(retryFailure, MARIADB_LOCK_WAIT_TIMEOUT));
  }

  /** MariaDB's error code of a lock wait past {@code innodb_lock_wait_timeout}. */
  private static final int MARIADB_LOCK_WAIT_TIMEOUT = 1205;

  @Override
  public final void ack() {}

  @Override
  public final void retry(Duration delay) {
    retryDelay = delay;
  }

  @Override
  public final void retryWhenStoreAvailable(Duration delay) {
    retryDelay = delay;
  }

  @Override
  public final void release() {
    retryDelay = Duration.ZERO;
  }

  @Override
  public final void deadLetter(DeadLetterReason reason) {
    deadLetter = reason;
  }
}
