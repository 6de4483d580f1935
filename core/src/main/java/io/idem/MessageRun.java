package io.idem;

import io.idem.spi.Acknowledgement;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Per-message processing of deliveries that one thread takes one after the other from one ordered
 * source — the records of one Kafka partition of a poll — opened by {@link
 * IdempotentConsumer#openRun()}. Each {@link #process} call means exactly what {@link
 * IdempotentConsumer#process} means: one transaction per message, the acknowledgement only after
 * its commit, the same outcomes and failure paths. What a run adds is that the caller says which
 * delivery comes next, so that the store can begin the next message's transaction and send its
 * claim in the same round trip as this message's COMMIT ({@link
 * io.idem.spi.ProcessedEventStore#openRun()}; store-jdbc: two round trips per new message instead
 * of three, one per duplicate instead of two).
 *
 * <p>Until the next {@link #process} call, that claim is an uncommitted marker holding its key's
 * row lock: call {@link #process} for the announced delivery right away, and {@link #close()} the
 * run as soon as the caller stops (try-with-resources) — a partition paused for a retry, revoked,
 * or the consumer closing. A delivery announced but then not processed costs nothing but that
 * round trip's work: the carried transaction is rolled back.
 *
 * <p>Not thread-safe: a run belongs to the thread that opened it.
 */
public interface MessageRun extends AutoCloseable {

  /**
   * Processes {@code message} as {@link IdempotentConsumer#process} does.
   *
   * @param next the delivery this run will process right after {@code message}, or {@code null}
   *     when there is none; asked at most once, and only when {@code message}'s transaction is about
   *     to commit. Return the same object to the next call: its key and fingerprint are then not
   *     computed again
   * @return what happened, as {@link IdempotentConsumer#process}
   * @throws RuntimeException as {@link IdempotentConsumer#process}
   */
  ProcessingOutcome process(
      InboundMessage message, Acknowledgement acknowledgement, Supplier<@Nullable InboundMessage> next);

  /** Rolls back a transaction begun for an announced delivery, if any. Never throws; idempotent. */
  @Override
  void close();
}
