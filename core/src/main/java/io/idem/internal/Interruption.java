package io.idem.internal;

import java.io.InterruptedIOException;
import java.nio.channels.ClosedByInterruptException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Tells a failure caused by shutting down from a failure of the work: the consumer's
 * {@code close()} interrupts a worker that is still running a handler after the grace period,
 * and what the handler then throws is not the message's fault. A failure is a shutdown when the
 * processing thread's interrupt flag is set, or when an {@link InterruptedException}, {@link
 * InterruptedIOException} (not a socket timeout) or {@link ClosedByInterruptException} is in its
 * cause chain (many libraries clear the flag when they throw those).
 */
final class Interruption {
  private Interruption() {}

  static boolean isShutdown(Throwable failure) {
    if (Thread.currentThread().isInterrupted()) {
      return true;
    }
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof InterruptedException
          || t instanceof ClosedByInterruptException
          || (t instanceof InterruptedIOException && !(t instanceof java.net.SocketTimeoutException))) {
        return true;
      }
    }
    return false;
  }
}
