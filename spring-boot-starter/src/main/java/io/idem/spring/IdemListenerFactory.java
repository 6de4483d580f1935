package io.idem.spring;

import io.idem.IdempotencyListener;
import org.jspecify.annotations.Nullable;

/**
 * The {@link IdempotencyListener} of each consumer group's pipeline; define a bean of this type to
 * replace the default ({@code MicrometerIdempotencyListener} when a {@code MeterRegistry} exists).
 * Called once per consumer group, from any thread.
 */
@FunctionalInterface
public interface IdemListenerFactory {

  /** The listener for {@code consumerGroup}, or {@code null} for none. */
  @Nullable IdempotencyListener listener(String consumerGroup);
}
