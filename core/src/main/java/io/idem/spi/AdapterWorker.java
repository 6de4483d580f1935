package io.idem.spi;

import io.idem.IdempotencyException;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * The steps every broker adapter's worker takes around {@link io.idem.IdempotentConsumer#process}
 * and in {@code close()}, written once (docs/ADAPTERS.md rules 3, 6 and 7). An adapter supplies
 * only what is broker-specific: how to hand an unsettled delivery back ({@link HandBack}) and how
 * it learns what was settled ({@link SettlementRecord}).
 *
 * <ul>
 *   <li>{@link #survive}: runs one delivery (or one batch) and survives whatever it throws — an
 *       acknowledgement that failed, or an {@link Error} from a listener or key extractor, which the
 *       pipeline does not catch. A settled delivery is left alone; an unsettled one is handed back
 *       after the backoff, and the worker goes on. A {@link VirtualMachineError} is rethrown once
 *       the delivery is on its way back, ending the worker.
 *   <li>{@link #stopsAfter}: after each delivery, whether the worker stops because {@code close()}
 *       interrupted it; a stray interrupt flag is cleared with a WARN, as it would fail the next
 *       delivery.
 *   <li>{@link #awaitAll} and {@link #interruptAndAwait}: {@code close()}'s bounded wait for the
 *       workers, then the interrupt past {@code shutdownTimeout}, then {@link #AFTER_INTERRUPT}
 *       more for them to {@link Acknowledgement#release() release} their deliveries before the
 *       adapter disconnects.
 * </ul>
 *
 * <p>Thread-safe: no state of its own. Logs through the adapter's logger, so the lines appear
 * under {@code io.idem.<broker>}.
 */
public final class AdapterWorker {
  /**
   * How long {@code close()} waits, past {@code shutdownTimeout}, for a worker it interrupted to
   * release its delivery before it closes the worker's broker session: 5 s.
   */
  public static final Duration AFTER_INTERRUPT = Duration.ofSeconds(5);

  private AdapterWorker() {}

  /** How the adapter hands an unsettled delivery back to its broker. */
  @FunctionalInterface
  public interface HandBack {
    /**
     * Returns the delivery to the broker unacknowledged: at once, or after {@code after} where the
     * worker should not take it again sooner ({@link Duration#ZERO} after a
     * {@link VirtualMachineError}). May block the worker for {@code after} (JMS holds its session),
     * or schedule the return (RabbitMQ's settler). Must not throw for a connection already gone:
     * the broker returns the delivery then.
     *
     * @param failure what processing threw
     */
    void handBack(Throwable failure, Duration after);

    /**
     * Whether this hand-back reports {@code failure} itself, so that {@link #survive} does not log
     * the unsettled delivery's failure (it still logs a {@link VirtualMachineError} and a throw
     * after the settlement). For an adapter that knows more than {@code survive} when it hands
     * back: SQS logs whether it still holds the message (or leaves it to reappear when its
     * visibility runs out) and reports a refused dead-letter copy at ERROR once per message, at
     * WARN after that (docs/ADAPTERS.md). Default {@code false}: {@code survive} logs it.
     *
     * @param failure what processing threw
     */
    default boolean reportsItself(Throwable failure) {
      return false;
    }
  }

  /**
   * Runs {@code processing} and survives what it throws (rule 6).
   *
   * @param what names the delivery in log lines ({@code "message ID:1 of orders"}); called only
   *     when something was thrown
   * @param processing builds the message and acknowledgement and calls the pipeline; may throw
   *     the broker client's checked exceptions
   * @param record the delivery's record, read after a throw; {@code null} (or a supplier
   *     returning {@code null}) when the throw came before the acknowledgement existed
   * @param backoff how long to keep an unsettled delivery from the worker after a throw (the
   *     adapter's reconnect or recovery interval), so that a delivery that always throws does not
   *     spin
   * @param onFatal called first on a {@link VirtualMachineError} (mark the worker failed, so
   *     {@code isRunning()} turns false even if logging fails for want of memory)
   * @param log the adapter's logger
   * @return what {@code processing} returned, or {@code null} when it threw
   * @throws VirtualMachineError rethrown after the hand-back (best effort; a failure of the
   *     hand-back is added as suppressed)
   */
  public static <T> @Nullable T survive(
      Supplier<String> what,
      Callable<T> processing,
      Supplier<@Nullable SettlementRecord> record,
      HandBack handBack,
      Duration backoff,
      Runnable onFatal,
      Logger log) {
    try {
      return processing.call();
    } catch (Throwable e) {
      if (e instanceof VirtualMachineError fatal) {
        onFatal.run();
        try {
          boolean settled = settled(record);
          log.error("{} failed fatally; {}, and this worker stops", what.get(),
              settled ? "it was settled" : "handed back to the broker", e);
          if (!settled) {
            handBack.handBack(e, Duration.ZERO);
          }
        } catch (Throwable secondary) {
          e.addSuppressed(secondary); // best effort: closing the connection returns it as well
        }
        throw fatal;
      }
      if (settled(record)) {
        if (e instanceof IdempotencyException) {
          // nacking, rolling back or re-showing a settled delivery would undo or double its settlement
          log.warn("{} counts as settled, not handed back: {}", what.get(), e.toString());
        } else {
          log.error("{} threw after it was settled; nothing to hand back", what.get(), e);
        }
        return null;
      }
      if (handBack.reportsItself(e)) {
        // the adapter's hand-back logs it, in its own words
      } else if (e instanceof IdempotencyException && e.getCause() instanceof InterruptedException) {
        // close() interrupted the settlement: not a failure of the message
        log.warn("{}: {}; handed back to the broker in {}", what.get(), e.getMessage(), backoff);
      } else {
        log.error("{} could not be settled; handed back to the broker in {}", what.get(), backoff, e);
      }
      handBack.handBack(e, backoff);
      return null;
    }
  }

  private static boolean settled(Supplier<@Nullable SettlementRecord> record) {
    SettlementRecord r = record.get();
    return r != null && r.isSettled();
  }

  /**
   * After a delivery: whether the worker stops because {@code close()} interrupted it (rule 3: the
   * delivery was released, the flag stays set). Otherwise a set interrupt flag is cleared with a
   * WARN: the consumer's workers are stopped by {@code close()}, and the flag would fail the next
   * delivery.
   *
   * @param stopping whether {@code close()} is under way
   * @param outcome what the pipeline returned, {@code null} when it threw
   * @param what names the delivery in the WARN line; called only then
   */
  public static boolean stopsAfter(boolean stopping, @Nullable ProcessingOutcome outcome,
      Supplier<String> what, Logger log) {
    if (stopping && (outcome == ProcessingOutcome.RELEASED || Thread.currentThread().isInterrupted())) {
      log.debug("worker {} stops: interrupted by close()", Thread.currentThread().getName());
      return true;
    }
    if (Thread.interrupted()) {
      log.warn("processing {} left worker {} interrupted ({}); the flag is cleared: the consumer's"
          + " workers are stopped by close(), and the flag would fail the next delivery", what.get(),
          Thread.currentThread().getName(), outcome);
    }
    return false;
  }

  /**
   * Waits for {@code threads} to end, until {@code deadlineNanos} ({@link System#nanoTime()}).
   * Interrupted while waiting, it stops waiting and sets the caller's interrupt flag again.
   *
   * @return the threads still alive, in order
   */
  public static List<Thread> awaitAll(List<Thread> threads, long deadlineNanos) {
    Objects.requireNonNull(threads, "threads");
    for (Thread thread : threads) {
      long left = deadlineNanos - System.nanoTime();
      if (left <= 0) {
        break;
      }
      try {
        thread.join(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    List<Thread> alive = new ArrayList<>();
    for (Thread thread : threads) {
      if (thread.isAlive()) {
        alive.add(thread);
      }
    }
    return alive;
  }

  /**
   * Interrupts {@code threads} (past {@code shutdownTimeout}: an interrupted handler is not a
   * failure, the pipeline reports {@link ProcessingOutcome#RELEASED}) and waits up to {@code
   * after} for them to release their deliveries and end, while their broker sessions are still
   * open.
   *
   * @return the threads still alive: the adapter closes their broker sessions under them
   */
  public static List<Thread> interruptAndAwait(List<Thread> threads, Duration after) {
    threads.forEach(Thread::interrupt);
    return awaitAll(threads, System.nanoTime() + after.toNanos());
  }
}
