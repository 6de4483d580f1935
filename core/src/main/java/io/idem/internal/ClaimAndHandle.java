package io.idem.internal;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.KeyedMessageHandler;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.internal.DefaultIdempotentConsumer.Handlers;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The work inside a pipeline's transaction, for one message or a batch: claim the keys, run the
 * handler for the new ones, confirm each claim. Thread-safe; a transaction context stays on the
 * thread running it.
 */
final class ClaimAndHandle<C> {
  private final ProcessedEventStore<C> store;
  private final Handlers<C> handlers;
  private final IdempotencyListener listener;
  /** No marker: every key is taken as new (IdempotentConsumer.Builder#naturallyIdempotent). */
  private final boolean naturallyIdempotent;
  private final Tracing tracing;

  ClaimAndHandle(ProcessedEventStore<C> store, Handlers<C> handlers, IdempotencyListener listener,
      boolean naturallyIdempotent, Tracing tracing) {
    this.store = store;
    this.handlers = handlers;
    this.listener = listener;
    this.naturallyIdempotent = naturallyIdempotent;
    this.tracing = tracing;
  }

  /** Claims one key with {@link ProcessedEventStore#claim} and handles the message if it is new. */
  ClaimResult one(C tx, InboundMessage message, IdempotencyKey key, byte[] fingerprint)
      throws Exception {
    return one(tx, message, key, fingerprint, Attempt.UNCOUNTED);
  }

  /**
   * {@link #one(Object, InboundMessage, IdempotencyKey, byte[])} for a delivery whose attempt the
   * store counted ({@link ProcessedEventStore#startAttempt}): the count is removed in this
   * transaction, so it goes exactly when the message's outcome commits; and a new key whose
   * attempts are spent is not handled: {@link AttemptsExhausted} rolls the claim back, and the
   * pipeline dead-letters the message.
   */
  ClaimResult one(C tx, InboundMessage message, IdempotencyKey key, byte[] fingerprint,
      Attempt attempt) throws Exception {
    ClaimResult claim = naturallyIdempotent
        ? ClaimResult.CLAIMED
        : claimed(() -> store.claim(tx, key, fingerprint), key, -1);
    if (claim == ClaimResult.CLAIMED && attempt.exhausted()) {
      throw new AttemptsExhausted(attempt.number());
    }
    if (attempt.counted()) {
      claimed(() -> {
        store.clearAttempts(tx, key);
        return null;
      }, key, -1);
    }
    if (claim == ClaimResult.CLAIMED) {
      handleNew(tx, List.of(new KeyedMessage(key, message)), new Running(), true);
    }
    return claim;
  }

  /**
   * Claims a batch's keys with one {@link ProcessedEventStore#claimAll} and handles the new
   * messages in order; the three lists are parallel. While a per-message handler runs (and its
   * claim is confirmed), {@code running} holds that message, so that when the transaction fails
   * the caller knows whose handler run it was.
   */
  List<ClaimResult> all(C tx, List<IdempotencyKey> keys, List<byte[]> fingerprints,
      List<InboundMessage> messages, Running running) throws Exception {
    List<ClaimResult> claims = naturallyIdempotent
        ? Collections.nCopies(keys.size(), ClaimResult.CLAIMED)
        : claimed(() -> store.claimAll(tx, keys, fingerprints), null, keys.size());
    if (claims.size() != keys.size()) {
      throw new StoreUnavailableException("the store answered " + claims.size() + " claim(s) for "
          + keys.size() + " keys", null);
    }
    List<KeyedMessage> fresh = new ArrayList<>(keys.size());
    for (int i = 0; i < keys.size(); i++) {
      if (claims.get(i) == ClaimResult.CLAIMED) {
        fresh.add(new KeyedMessage(keys.get(i), messages.get(i)));
      }
    }
    if (!fresh.isEmpty()) {
      handleNew(tx, fresh, running, false);
    }
    return claims;
  }

  /**
   * Runs the handler for the claimed messages in order, confirming each claim after its handler
   * ({@link ProcessedEventStore#confirmClaim}), or the batch handler once with all of them, then
   * one {@link ProcessedEventStore#confirmClaims} for all; tells {@code afterHandler} after each
   * check. A store may defer the check to its commit (store-jdbc on MariaDB): a claim found lost
   * there fails the batch's transaction as a whole, which the pipeline redoes message by message. Each handler call runs inside
   * a {@link HandlerScope} (the MDC, the message for {@link io.idem.TraceContext}); {@code own}:
   * the one message of its own transaction, whose observation an outbox row continues.
   */
  private void handleNew(C tx, List<KeyedMessage> fresh, Running running, boolean own)
      throws Exception {
    KeyedMessageHandler<C> single = handlers.single;
    if (single != null) {
      for (KeyedMessage each : fresh) {
        running.message = each.message();
        Object previous = HandlerScope.enter(own ? tracing.frame(each.message()) : each.message(),
            each.key().consumerGroup(), each.message().source(), each.key());
        try {
          single.handle(each.key(), each.message(), tx);
        } finally {
          HandlerScope.exit(previous);
        }
        confirmed(tx, each);
        running.message = null;
      }
      return;
    }
    KeyedMessage first = fresh.get(0);
    Object previous = HandlerScope.enter(own ? tracing.frame(fresh) : fresh,
        first.key().consumerGroup(), first.message().source(),
        fresh.size() == 1 ? first.key() : null);
    try {
      Objects.requireNonNull(handlers.batch).handle(Collections.unmodifiableList(fresh), tx);
    } finally {
      HandlerScope.exit(previous);
    }
    // one check for the batch handler's keys (MariaDB: one statement, sent with the COMMIT), then
    // afterHandler per message as for per-message handlers
    List<IdempotencyKey> keys = new ArrayList<>(fresh.size());
    for (KeyedMessage each : fresh) {
      keys.add(each.key());
    }
    store.confirmClaims(tx, keys);
    for (KeyedMessage each : fresh) {
      listener.afterHandler(each.message(), each.key());
    }
  }

  private void confirmed(C tx, KeyedMessage each) {
    // the handler may have swallowed a database error (the transaction is then aborted and its
    // commit would silently roll back) or ended the transaction itself; without a marker too,
    // since an aborted transaction would lose the handler's upsert just the same
    store.confirmClaim(tx, each.key());
    listener.afterHandler(each.message(), each.key());
  }

  /**
   * A delivery's attempt as the pipeline decided it before its transaction: {@code number} from 1;
   * {@code counted} when the store counted it ({@link ProcessedEventStore#startAttempt}), so its
   * count is to be removed with the outcome; {@code exhausted} when the handler must not run again.
   */
  record Attempt(int number, boolean counted, boolean exhausted) {
    static final Attempt UNCOUNTED = new Attempt(1, false, false);
  }

  /**
   * Thrown out of a transaction, so that it rolls back, when a new key's attempts are spent before
   * its handler runs; never reaches a handler or a store's caller.
   */
  static final class AttemptsExhausted extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int attempt;

    AttemptsExhausted(int attempt) {
      super("attempt " + attempt + " is past maxAttempts; not handled", null, false, false);
      this.attempt = attempt;
    }
  }

  /**
   * The message whose per-message handler is running (or whose claim is being confirmed right
   * after it) in a batch's transaction, {@code null} between handlers, and always {@code null}
   * with a batch handler (one run for all: nobody's alone). Confined to the transaction's thread.
   */
  static final class Running {
    @Nullable InboundMessage message;
  }

  /**
   * A claim of the store: a failing claim is never the message's fault (missing table,
   * permissions, outage), so anything but a transaction retry is a store outage: retried, never
   * dead-lettered. The message names {@code key}, or else the {@code keys} of a batch (built only
   * on failure: this runs for every message).
   */
  private static <T> T claimed(Supplier<T> claim, @Nullable IdempotencyKey key, int keys) {
    try {
      return claim.get();
    } catch (StoreUnavailableException | TransactionRetryException e) {
      throw e;
    } catch (RuntimeException e) {
      String what = key != null ? "claim of key '" + key.value() + "'" : "claim of " + keys + " keys";
      throw new StoreUnavailableException(what + " failed: " + e, e);
    }
  }
}
