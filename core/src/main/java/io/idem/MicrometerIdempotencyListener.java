package io.idem;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the pipeline's counts to Micrometer. Needs {@code io.micrometer:micrometer-core} on
 * the classpath (an optional dependency of {@code idem-core}). Attach it with {@code
 * IdempotentConsumer.builder(store).listener(new MicrometerIdempotencyListener(registry, group))}.
 * Thread-safe.
 *
 * <p>Meters, all tagged {@code consumer.group}:
 *
 * <ul>
 *   <li>{@code idem.messages} (timer, tags {@code outcome} = a {@link ProcessingOutcome} and
 *       {@code ack} = {@code ok}|{@code failed}): one per delivery the pipeline decided about,
 *       with the time {@link IdempotentConsumer#process} took — also when telling the broker
 *       failed ({@code ack=failed}, {@code outcome} the intended one);
 *   <li>{@code idem.key.fallback} (counter): keys taken from broker message ids;
 *   <li>{@code idem.retries} (counter, tag {@code cause} = {@code handler} (an attempt used),
 *       {@code store} (the store could not reach the database), {@code lock} (40001, 40P01 or the
 *       claim's lock timeout: the transaction is retried) or {@code shutdown} (handed back at
 *       close));
 *   <li>{@code idem.dead.letters} (counter, tag {@code cause} = a {@link DeadLetterCause}): one per
 *       stored dead-letter copy;
 *   <li>{@code idem.store.consecutive.failures} (gauge): store-unavailable transactions in a row,
 *       0 when the store is healthy;
 *   <li>{@code idem.store.since.success} (gauge, seconds): time since a transaction last reached
 *       the database (since this listener was created, before the first).
 * </ul>
 */
public final class MicrometerIdempotencyListener implements IdempotencyListener {
  private final MeterRegistry registry;
  private final String consumerGroup;
  private final Counter fallbacks;
  private final AtomicInteger consecutiveStoreFailures = new AtomicInteger();
  private final AtomicLong lastSuccessNanos = new AtomicLong(System.nanoTime());

  /**
   * @param registry where meters are registered
   * @param consumerGroup the value of the {@code consumer.group} tag
   */
  public MicrometerIdempotencyListener(MeterRegistry registry, String consumerGroup) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.consumerGroup = Objects.requireNonNull(consumerGroup, "consumerGroup");
    this.fallbacks =
        Counter.builder("idem.key.fallback")
            .description("Idempotency keys taken from broker message ids (explicit fallback)")
            .tag("consumer.group", consumerGroup)
            .register(registry);
    Gauge.builder("idem.store.consecutive.failures", consecutiveStoreFailures, AtomicInteger::get)
        .description("Transactions in a row that failed because the store could not reach the database")
        .tag("consumer.group", consumerGroup)
        .register(registry);
    Gauge.builder("idem.store.since.success", lastSuccessNanos,
            last -> (System.nanoTime() - last.get()) / 1e9)
        .description("Seconds since a transaction last reached the database")
        .baseUnit("seconds")
        .tag("consumer.group", consumerGroup)
        .register(registry);
  }

  @Override
  public void onKey(InboundMessage message, IdempotencyKey key) {
    if (key.source() == KeySource.BROKER_ID) {
      fallbacks.increment();
    }
  }

  @Override
  public void onRetry(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome kind,
      Throwable failure,
      Duration delay) {
    registry
        .counter("idem.retries", "consumer.group", consumerGroup, "cause", retryCause(kind))
        .increment();
  }

  /** The {@code cause} tag of {@code idem.retries} for a retry outcome. */
  static String retryCause(ProcessingOutcome kind) {
    return switch (kind) {
      case RETRY_STORE_UNAVAILABLE -> "store";
      case RETRY_TRANSACTION -> "lock";
      case RELEASED -> "shutdown";
      default -> "handler";
    };
  }

  @Override
  public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
    registry
        .counter("idem.dead.letters", "consumer.group", consumerGroup, "cause", reason.cause().name())
        .increment();
  }

  @Override
  public void onOutcome(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome outcome,
      Duration elapsed) {
    record(key, outcome, "ok", elapsed);
  }

  @Override
  public void onAcknowledgementFailure(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome intended,
      RuntimeException failure,
      Duration elapsed) {
    record(key, intended, "failed", elapsed);
  }

  private void record(
      @Nullable IdempotencyKey key, ProcessingOutcome outcome, String ack, Duration elapsed) {
    if (outcome == ProcessingOutcome.RETRY_STORE_UNAVAILABLE) {
      consecutiveStoreFailures.incrementAndGet();
    } else if (key != null && outcome != ProcessingOutcome.RELEASED) {
      // a keyed outcome other than these had its transaction reach the database
      consecutiveStoreFailures.set(0);
      lastSuccessNanos.set(System.nanoTime());
    }
    Timer.builder("idem.messages")
        .description("Deliveries decided by the idempotent pipeline, by outcome")
        .tag("consumer.group", consumerGroup)
        .tag("outcome", outcome.name())
        .tag("ack", ack.toLowerCase(Locale.ROOT))
        .register(registry)
        .record(elapsed);
  }
}
