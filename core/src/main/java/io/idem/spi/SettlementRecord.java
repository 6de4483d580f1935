package io.idem.spi;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The side channel between an adapter's {@link Acknowledgement} and the worker that ran the
 * delivery: what the pipeline's call left behind, which the worker needs and which the returned
 * {@link io.idem.ProcessingOutcome} cannot tell — above all when {@code process} threw and returned
 * nothing (docs/ADAPTERS.md rule 6: a settled delivery is left alone, an unsettled one is handed
 * back), and how long the pipeline asked to hold a delivery for the store.
 *
 * <p>One record per delivery. The acknowledgement marks it; the worker reads it after the pipeline
 * returned or threw. Where settling is handed to another thread (RabbitMQ's settler), the
 * acknowledgement marks it settled when the settlement is handed over, as from then on the
 * delivery must never be returned. Thread-safe (volatile fields): marked on one thread, read on
 * another.
 */
public final class SettlementRecord {
  private volatile boolean settled;
  private volatile boolean released;
  private volatile @Nullable Duration heldForStore;

  /**
   * The delivery's fate is decided with the broker, or handed over to be: acked or dead-lettered
   * (the dead-letter copy stored), or its return already made or scheduled by the acknowledgement
   * itself (RabbitMQ's delayed reject on the settler thread, Kafka's recorded decision). From now
   * on nobody else hands it back: it is never nacked, rolled back or made visible again after a
   * throw. An adapter whose return can fail and be retried by the worker (a JMS rollback) marks
   * only the ack and the dead letter.
   *
   * @throws IllegalStateException when already settled: the pipeline settles a delivery once
   */
  public void markSettled() {
    if (settled) {
      throw new IllegalStateException("this delivery was already settled");
    }
    settled = true;
  }

  /**
   * {@link Acknowledgement#retryWhenStoreAvailable} kept the delivery: the worker runs it through
   * the pipeline again after {@code delay}, without returning it to the broker.
   */
  public void markHeldForStore(Duration delay) {
    heldForStore = Objects.requireNonNull(delay, "delay");
  }

  /** {@link Acknowledgement#release()} handed the delivery back at shutdown: the worker stops. */
  public void markReleased() {
    released = true;
  }

  /** Whether the delivery is settled (or being settled by a task already handed over). */
  public boolean isSettled() {
    return settled;
  }

  /** Whether the delivery was released at shutdown. */
  public boolean isReleased() {
    return released;
  }

  /** The delay {@link Acknowledgement#retryWhenStoreAvailable} asked for, or {@code null}. */
  public @Nullable Duration heldForStore() {
    return heldForStore;
  }

  @Override
  public String toString() {
    return settled ? "settled" : released ? "released"
        : heldForStore != null ? "held for the store " + heldForStore : "unsettled";
  }
}
