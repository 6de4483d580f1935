package io.idem.testkit;

/** Where {@link CrashInjector} halts the JVM, named after the pipeline step it interrupts. */
public enum CrashPoint {
  /** After the key was extracted, before the transaction opened and claimed it. */
  BEFORE_CLAIM,
  /** After the handler wrote, before the transaction committed. */
  AFTER_HANDLER,
  /** After the transaction committed, before the broker was told (acked). */
  AFTER_COMMIT,
  /**
   * While the broker is being told: after the commit, a separate thread halts the JVM a moment
   * later ({@code idem.crash.ack-delay-micros}, default 300 µs) while the processing thread goes
   * on into the adapter's acknowledgement, so the halt lands during the ack request or just
   * after it — without any hook inside the adapter.
   */
  DURING_ACK
}
