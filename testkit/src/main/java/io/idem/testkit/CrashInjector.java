package io.idem.testkit;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A listener that kills its own JVM with {@code Runtime.halt} (no shutdown hooks, no finally
 * blocks, like {@code kill -9}) at a chosen {@link CrashPoint} after a number of messages: the
 * victim side of crash tests. Configure it in the child JVM with system properties:
 *
 * <ul>
 *   <li>{@code idem.crash.point} — a {@link CrashPoint} name; absent = never crash;
 *   <li>{@code idem.crash.after} — how many times the point is passed before the crash (default
 *       0: the first time);
 *
 *   <li>{@code idem.crash.broker-calls} — {@code intercepted} when the child JVM wraps its broker
 *       client and calls {@link #atBrokerOperation} at the broker operations: then
 *       {@link CrashPoint#DURING_ACK} and {@link CrashPoint#DEAD_LETTER_COPY_STORED} halt only
 *       there, inside the broker call;
 *   <li>{@code idem.crash.poison-key} — a key whose handler "kills the process": the JVM halts
 *       after the handler of that key returned, before its transaction commits, every time (in
 *       every life of the JVM), printing {@code IDEM-CRASH POISON <key>} — a process-killing
 *       message. Independent of {@code idem.crash.point}.
 * </ul>
 *
 * <p>Without intercepted broker calls, {@link CrashPoint#DURING_ACK} halts from a helper thread
 * shortly after the commit, while the processing thread goes on into the adapter's
 * acknowledgement. Before halting it prints {@code IDEM-CRASH <point> <key or operation>} to
 * stdout, so the parent can tell a planned crash from an accident. Thread-safe.
 */
public final class CrashInjector implements IdempotencyListener {
  /** Exit status of a planned crash: {@value}. */
  public static final int EXIT_STATUS = 137;

  /** The name a poison-key halt prints in its {@code IDEM-CRASH} line: {@value}. */
  public static final String POISON = "POISON";

  private final @Nullable CrashPoint point;
  private final long after;
  private final boolean interceptedBrokerCalls;
  private final AtomicLong passes = new AtomicLong();
  private final @Nullable String poisonKey;

  /** A crash at {@code point} after {@code after} passes; DURING_ACK from a helper thread. */
  public CrashInjector(@Nullable CrashPoint point, long after) {
    this(point, after, false);
  }

  /**
   * @param interceptedBrokerCalls whether the caller wraps its broker client and calls {@link
   *     #atBrokerOperation}: then DURING_ACK and DEAD_LETTER_COPY_STORED halt only there
   */
  public CrashInjector(@Nullable CrashPoint point, long after, boolean interceptedBrokerCalls) {
    this(point, after, interceptedBrokerCalls, null);
  }

  /**
   * @param poisonKey a key whose every handler run halts the JVM (after the handler returned,
   *     before the commit), or {@code null} for none
   */
  public CrashInjector(@Nullable CrashPoint point, long after, boolean interceptedBrokerCalls,
      @Nullable String poisonKey) {
    this.point = point;
    this.after = after;
    this.interceptedBrokerCalls = interceptedBrokerCalls;
    this.poisonKey = poisonKey;
  }

  /**
   * To be called by a wrapper of the broker client when the broker operation of {@code here}
   * ({@link CrashPoint#DURING_ACK}: the settling call, e.g. SQS DeleteMessage; {@link
   * CrashPoint#DEAD_LETTER_COPY_STORED}: the accepted dead-letter copy) has been performed and
   * before it returns to the adapter: halts when {@code here} is the configured point and its pass
   * count is reached. {@code operation} is printed in the {@code IDEM-CRASH} line.
   */
  public void atBrokerOperation(CrashPoint here, String operation) {
    pass(here, operation);
  }

  /**
   * From {@code idem.crash.point}, {@code idem.crash.after}, {@code idem.crash.broker-calls} and
   * {@code idem.crash.poison-key}.
   */
  public static CrashInjector fromSystemProperties() {
    String name = System.getProperty("idem.crash.point");
    CrashPoint point = name == null || name.isBlank()
        ? null
        : CrashPoint.valueOf(name.trim().toUpperCase(Locale.ROOT));
    String poison = System.getProperty("idem.crash.poison-key");
    return new CrashInjector(point, Long.getLong("idem.crash.after", 0L),
        "intercepted".equals(System.getProperty("idem.crash.broker-calls")),
        poison == null || poison.isBlank() ? null : poison);
  }

  private void pass(CrashPoint here, String key) {
    if (point == here && passes.getAndIncrement() == after) {
      halt(here, key);
    }
  }

  private static void halt(Object here, String key) {
    System.out.println("IDEM-CRASH " + here + " " + key);
    System.out.flush();
    Runtime.getRuntime().halt(EXIT_STATUS);
  }

  @Override
  public void beforeClaim(InboundMessage message, IdempotencyKey key) {
    pass(CrashPoint.BEFORE_CLAIM, key.value());
  }

  @Override
  public void afterHandler(InboundMessage message, IdempotencyKey key) {
    if (key.value().equals(poisonKey)) {
      halt(POISON, key.value());
    }
    pass(CrashPoint.AFTER_HANDLER, key.value());
  }

  @Override
  public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
    pass(CrashPoint.AFTER_COMMIT, key.value());
    if (point == CrashPoint.DURING_ACK && !interceptedBrokerCalls && passes.getAndIncrement() == after) {
      long delayNanos = Long.getLong("idem.crash.ack-delay-micros", 300L) * 1000;
      Thread killer = new Thread(() -> {
        long until = System.nanoTime() + delayNanos;
        while (System.nanoTime() < until) {
          Thread.onSpinWait();
        }
        halt(CrashPoint.DURING_ACK, key.value());
      }, "idem-crash-during-ack");
      killer.setDaemon(true);
      killer.start();
    }
  }
}
