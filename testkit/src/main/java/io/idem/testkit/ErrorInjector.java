package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A listener that throws an {@link Error} for one key from {@link #afterCommit} (after the store
 * transaction committed, before the broker is told) or from {@link #onOutcome} (after the
 * acknowledgement settled the message). {@code IdempotentConsumer} turns a handler's Errors into
 * handler failures, but a listener's escape {@code process} into the adapter, so this tests what
 * an adapter does with a Throwable it did not expect. Thread-safe.
 */
public final class ErrorInjector implements IdempotencyListener {
  private final String key;
  private final int times;
  private final boolean onOutcome;
  private final Supplier<Error> error;
  private final AtomicInteger calls = new AtomicInteger();

  private ErrorInjector(String key, int times, boolean onOutcome, Supplier<Error> error) {
    this.key = key;
    this.times = times;
    this.onOutcome = onOutcome;
    this.error = error;
  }

  /** Throws {@code error} from {@link #afterCommit} on the first {@code times} commits of {@code key}. */
  public static ErrorInjector afterCommit(String key, int times, Error error) {
    return new ErrorInjector(key, times, false, () -> error);
  }

  /**
   * Throws {@code error} from {@link #onOutcome} on the first {@code times} settled deliveries of
   * {@code key}, whatever their outcome: the broker was already told.
   */
  public static ErrorInjector onOutcome(String key, int times, Error error) {
    return new ErrorInjector(key, times, true, () -> error);
  }

  /** Throws an {@link InjectedError} on the first {@code times} commits of {@code key}. */
  public static ErrorInjector error(String key, int times) {
    return new ErrorInjector(key, times, false, () -> new InjectedError("injected after the commit of " + key));
  }

  /** Throws an {@link InjectedVmError} on every commit of {@code key}. */
  public static ErrorInjector vmError(String key) {
    return new ErrorInjector(key, Integer.MAX_VALUE, false,
        () -> new InjectedVmError("injected after the commit of " + key));
  }

  /**
   * Throws an {@link InjectedError} from {@link #onOutcome} on the first {@code times} settled
   * deliveries of {@code key}, whatever their outcome: the broker was already told.
   */
  public static ErrorInjector errorOnOutcome(String key, int times) {
    return new ErrorInjector(key, times, true, () -> new InjectedError("injected after the outcome of " + key));
  }

  @Override
  public void afterCommit(InboundMessage message, IdempotencyKey committed, ProcessingOutcome pending) {
    if (!onOutcome) {
      fire(committed);
    }
  }

  @Override
  public void onOutcome(
      InboundMessage message, @Nullable IdempotencyKey settled, ProcessingOutcome outcome, Duration elapsed) {
    if (onOutcome) {
      fire(settled);
    }
  }

  private void fire(@Nullable IdempotencyKey at) {
    if (at != null && at.value().equals(key) && calls.getAndIncrement() < times) {
      throw error.get();
    }
  }

  /** An application's own Error: neither a {@code LinkageError} nor an {@code AssertionError}. */
  public static final class InjectedError extends Error {
    private static final long serialVersionUID = 1L;

    InjectedError(String message) {
      super(message);
    }
  }

  /** Stands in for an {@code OutOfMemoryError}. */
  public static final class InjectedVmError extends VirtualMachineError {
    private static final long serialVersionUID = 1L;

    InjectedVmError(String message) {
      super(message);
    }
  }
}
