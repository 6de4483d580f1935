package io.idem.http.internal;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.ProcessedEventStore;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP endpoint's run through Idem's own pipeline ({@link IdempotentConsumer}), not a copy of
 * it: one {@link HttpMessage} per request, processed by {@link IdempotentConsumer#process} with
 * its {@link Exchange} as the acknowledgement. Envelopes are off (an HTTP body is the event), the
 * key is the one the endpoint read and checked before, and the handler is the exchange's work.
 *
 * <p>A {@link ProcessingOutcome#RETRY_TRANSACTION} that is not the claim's lock timeout (a
 * deadlock, a serialization failure: nothing was applied, nobody was at fault) is run again here,
 * at most {@value #TRANSACTION_RETRIES} times, after the pipeline's short random delay. The claim's
 * lock timeout is tried {@value #IN_FLIGHT_CHECKS} times, 2 ms apart, before it is returned (the
 * endpoint answers 409): a 1 ms timeout can also run out on a brief wait for a lock that is not the
 * key's (the relation extension lock of a concurrent insert). Thread-safe.
 *
 * @param <C> the store's transaction context
 */
public final class HttpPipeline<C> {
  /** Runs of a request whose transaction PostgreSQL asked to retry: {@value}. */
  static final int TRANSACTION_RETRIES = 3;
  /** Claims that must time out in a row before a key is answered as in flight: {@value}. */
  static final int IN_FLIGHT_CHECKS = 3;
  /** The pause between two of them: 2 ms. */
  static final Duration IN_FLIGHT_PAUSE = Duration.ofMillis(2);

  private final IdempotentConsumer<C> consumer;

  public HttpPipeline(ProcessedEventStore<C> store, String consumerGroup, RetryPolicy retryPolicy,
      boolean detectPayloadConflicts, OversizedKeyPolicy oversizedKeys,
      List<IdempotencyListener> listeners) {
    IdempotentConsumer.Builder<C> builder = IdempotentConsumer.builder(store)
        .consumerGroup(consumerGroup)
        .standardEnvelopes(false)
        .keyExtractor(new CarriedKey())
        // each request bounds its own transaction retries (below); the pipeline's per-key count
        // "in a row" would add up the retries of every client racing one key, and turn the
        // claim's lock timeout of an in-flight key (a 409) into a failed attempt (a 500)
        .retryPolicy(retryPolicy.toBuilder().maxTransactionRetries(Integer.MAX_VALUE).build())
        .detectPayloadConflicts(detectPayloadConflicts)
        .oversizedKeys(oversizedKeys)
        .listener(new RetryRecorder())
        .handler((key, message, transaction) -> exchangeOf(message).run(key, transaction));
    listeners.forEach(builder::listener);
    this.consumer = builder.build();
  }

  /** The pipeline; its consumer group is the endpoint's. */
  public IdempotentConsumer<C> consumer() {
    return consumer;
  }

  /**
   * Processes the request; the outcome says what to answer, its exchange what happened. Only
   * returns after the transaction ended.
   */
  public ProcessingOutcome process(HttpMessage message) {
    Exchange<?> exchange = message.exchange();
    int timeouts = 0;
    for (int run = 1; ; run++) {
      exchange.clearRun();
      ProcessingOutcome outcome = consumer.process(message, exchange);
      if (outcome != ProcessingOutcome.RETRY_TRANSACTION) {
        return outcome;
      }
      if (exchange.claimTimedOut()) {
        // a short lock timeout also runs out on a brief wait for another lock the INSERT needs
        // (PostgreSQL's relation extension lock is a heavyweight lock): the key is "in flight"
        // only when the claim times out IN_FLIGHT_CHECKS times in a row
        if (++timeouts >= IN_FLIGHT_CHECKS || !sleep(IN_FLIGHT_PAUSE)) {
          return outcome;
        }
        continue;
      }
      Duration delay = exchange.retryDelay();
      if (run >= TRANSACTION_RETRIES || (delay != null && !delay.isZero() && !sleep(delay))) {
        return outcome;
      }
    }
  }

  private static boolean sleep(Duration delay) {
    try {
      Thread.sleep(delay.toMillis());
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @SuppressWarnings("unchecked")
  private static <C> Exchange<C> exchangeOf(InboundMessage message) {
    if (!(message instanceof HttpMessage http)) {
      throw new IllegalStateException("an HTTP endpoint's pipeline got " + message);
    }
    return (Exchange<C>) http.exchange();
  }

  /** The key the endpoint read and checked before the pipeline ran. */
  private static final class CarriedKey implements IdempotencyKeyExtractor {
    @Override
    public KeyExtraction extract(InboundMessage message) {
      if (message instanceof HttpMessage http) {
        return KeyExtraction.found(http.key(), http.keySource(), http.keyOrigin());
      }
      return KeyExtraction.absent("not an HTTP request");
    }

    @Override
    public String toString() {
      return "the HTTP endpoint's key";
    }
  }

  /** Keeps the key the pipeline claimed and the failure it retried on, for the answer. */
  private static final class RetryRecorder implements IdempotencyListener {
    @Override
    public void onKey(InboundMessage message, IdempotencyKey key) {
      if (message instanceof HttpMessage http) {
        http.exchange().keyed(key);
      }
    }

    @Override
    public void onRetry(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome kind, Throwable failure, Duration delay) {
      if (message instanceof HttpMessage http) {
        http.exchange().retriedOn(failure);
      }
    }
  }
}
