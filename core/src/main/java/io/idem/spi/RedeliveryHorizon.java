package io.idem.spi;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How long after its first delivery a message of one source can still be delivered again — the
 * shortest time a processed-events marker must be kept so that every redelivery still finds it.
 * A retention window shorter than a source's horizon lets a late redelivery apply its effect a
 * second time (docs/STORE.md, "Retention").
 *
 * <p>One implementation per broker adapter: Kafka reads the topic's {@code retention.ms} with the
 * Admin client, SQS the queue's {@code MessageRetentionPeriod}; RabbitMQ and JMS cannot be asked,
 * so the user declares the horizon (message TTL, the longest retry loop). Implementations may
 * contact the broker in {@link #read()}; they are called once, at the start-up of a retention job,
 * from one thread.
 */
@FunctionalInterface
public interface RedeliveryHorizon {

  /**
   * Reads the horizon now.
   *
   * @return the horizon, bounded or not
   * @throws RuntimeException when the broker could not be asked (the caller refuses to start: an
   *     unknown horizon is never taken as a short one)
   */
  Horizon read();

  /**
   * A horizon the user states (RabbitMQ, JMS, or any source Idem cannot ask).
   *
   * @param source what it is about, for messages: {@code "rabbitmq queue orders"}
   * @param bound the longest a message can still be redelivered after its first delivery; not
   *     negative
   * @param basis where the number comes from: {@code "x-message-ttl 2 days + 1 day of retries"}
   * @throws IllegalArgumentException when {@code bound} is negative
   */
  static RedeliveryHorizon declared(String source, Duration bound, String basis) {
    Horizon horizon = Horizon.bounded(source, bound, "declared: " + basis);
    return () -> horizon;
  }

  /**
   * What a {@link RedeliveryHorizon} found. Immutable.
   *
   * @param source the source it is about ({@code "kafka topic orders"})
   * @param bound the horizon, or {@code null} when it is unbounded or unknowable (infinite Kafka
   *     retention, a compacted topic, a replay from the beginning)
   * @param basis the broker settings it was derived from, for messages and logs
   */
  record Horizon(String source, @Nullable Duration bound, String basis) {
    public Horizon {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(basis, "basis");
      if (bound != null && bound.isNegative()) {
        throw new IllegalArgumentException("bound must not be negative, but was " + bound);
      }
    }

    /** A known horizon. */
    public static Horizon bounded(String source, Duration bound, String basis) {
      return new Horizon(source, Objects.requireNonNull(bound, "bound"), basis);
    }

    /** No bound: a message may come back however old it is. */
    public static Horizon unbounded(String source, String basis) {
      return new Horizon(source, null, basis);
    }

    /** The bound, empty when unbounded. */
    public Optional<Duration> boundIfKnown() {
      return Optional.ofNullable(bound);
    }
  }
}
