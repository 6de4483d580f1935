package io.idem;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the pipeline's counts to Micrometer. Needs {@code io.micrometer:micrometer-core} on
 * the classpath (an optional dependency of {@code idem-core}). Thread-safe.
 *
 * <p>Meters, all tagged {@code consumer.group}:
 *
 * <ul>
 *   <li>{@code idem.messages} (timer, tag {@code outcome}): one per settled delivery, with the
 *       time {@link IdempotentConsumer#process} took;
 *   <li>{@code idem.key.fallback} (counter): keys taken from broker message ids;
 *   <li>{@code idem.retries} (counter, tag {@code reason} = {@code handler}|{@code store});
 *   <li>{@code idem.dead.letters} (counter, tag {@code cause} = a {@link DeadLetterCause}).
 * </ul>
 */
public final class MicrometerIdempotencyListener implements IdempotencyListener {
  private final MeterRegistry registry;
  private final String consumerGroup;
  private final Counter fallbacks;

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
  }

  @Override
  public void onKey(InboundMessage message, IdempotencyKey key) {
    if (key.source() == KeySource.BROKER_ID) {
      fallbacks.increment();
    }
  }

  @Override
  public void onRetry(
      InboundMessage message, @Nullable IdempotencyKey key, Throwable failure, Duration delay) {
    registry
        .counter(
            "idem.retries",
            "consumer.group", consumerGroup,
            "reason", failure instanceof StoreUnavailableException ? "store" : "handler")
        .increment();
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
    Timer.builder("idem.messages")
        .description("Deliveries settled by the idempotent pipeline, by outcome")
        .tag("consumer.group", consumerGroup)
        .tag("outcome", outcome.name())
        .register(registry)
        .record(elapsed);
  }
}
