package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A listener that throws an {@link Error} from {@link #afterCommit} for one key: after the store
 * transaction committed and before the broker is told. {@code IdempotentConsumer} turns a
 * handler's Errors into handler failures, but a listener's escape {@code process} into the
 * adapter, so this tests what an adapter does with a Throwable it did not expect. Thread-safe.
 */
public final class ErrorInjector implements IdempotencyListener {
  private final String key;
  private final int times;
  private final Supplier<Error> error;
  private final AtomicInteger calls = new AtomicInteger();

  private ErrorInjector(String key, int times, Supplier<Error> error) {
    this.key = key;
    this.times = times;
    this.error = error;
  }

  /** Throws an {@link InjectedError} on the first {@code times} commits of {@code key}. */
  public static ErrorInjector error(String key, int times) {
    return new ErrorInjector(key, times, () -> new InjectedError("injected after the commit of " + key));
  }

  /** Throws an {@link InjectedVmError} on every commit of {@code key}. */
  public static ErrorInjector vmError(String key) {
    return new ErrorInjector(key, Integer.MAX_VALUE, () -> new InjectedVmError("injected after the commit of " + key));
  }

  @Override
  public void afterCommit(InboundMessage message, IdempotencyKey committed, ProcessingOutcome pending) {
    if (committed.value().equals(key) && calls.getAndIncrement() < times) {
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
