package io.idem.sqs;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What this JVM saw happen to each message of a queue, per {@code MessageId}: how many of its
 * receives ended without a handler run, and whether its handler was started without an outcome
 * being seen.
 *
 * <p><b>Attempts.</b> A receive that ended without a handler run — handed back unstarted (the rest
 * of a FIFO group, a batch at close or after a poll error, a message released at shutdown or
 * during a store outage) or left to reappear because its visibility was too close to running out
 * — is counted by SQS in {@code ApproximateReceiveCount}; this ledger subtracts them, and adds the
 * retries run in process without a new receive (a FIFO message retried ahead of the rest of its
 * group), so that the attempt reported is the number of handler runs (issue 11: an attempt is a
 * real try, not a receive).
 *
 * <p><b>Unaccounted redeliveries</b> ({@link io.idem.InboundMessage#unaccountedRedelivery()},
 * docs/FAILURES.md "Attempts that survive the process"). A receive is flagged when SQS says the
 * message was received before ({@code ApproximateReceiveCount} above 1) and this ledger does not
 * know how that earlier receive ended: it never saw the message (another process received it, or
 * this JVM was restarted — the process may have died in its handler), or it saw its handler
 * {@linkplain #started started} and never saw it {@linkplain #ended end} (a {@link
 * VirtualMachineError} stopped the consumer during it, or its visibility ran out while it ran). A
 * message once flagged stays flagged for as long as it is remembered, so that the store, which
 * then counts its attempts, goes on counting them after an in-process failure. Receives this
 * consumer accounted for itself — a retry it sent back with {@code ChangeMessageVisibility}, a
 * hand-back, a skip, an in-process retry — are never what flags a message.
 *
 * <p>Kept in memory, one ledger per queue URL in this JVM ({@link #forQueue(String)}), shared by
 * every consumer of that queue here (so a message one consumer hands back at close is not counted
 * against it by the next one), for the last {@value #CAPACITY} messages (least recently used
 * first out): a message handed back by a consumer in another process, or before the JVM
 * restarted, still counts those receives, and is flagged. Thread-safe.
 */
final class AttemptLedger {
  static final int CAPACITY = RecentIds.CAPACITY;
  private static final Map<String, AttemptLedger> BY_QUEUE = new ConcurrentHashMap<>();

  /** The ledger of the queue at {@code queueUrl} in this JVM. */
  static AttemptLedger forQueue(String queueUrl) {
    return BY_QUEUE.computeIfAbsent(queueUrl, url -> new AttemptLedger());
  }

  /** The attempt a receive stands for, from 1, and whether it is an unaccounted redelivery. */
  record Attempt(int number, boolean unaccounted) {}

  /** One message as seen here; guarded by the ledger. */
  private static final class Seen {
    /** Receives that ended without a handler run, less the runs in process. */
    int adjustment;
    /** Its handler was started and no outcome was seen since. */
    boolean running;
    /** Flagged once: its attempts are counted in the store from then on. */
    boolean flagged;
  }

  private final Map<String, Seen> seen;

  AttemptLedger() {
    this(CAPACITY);
  }

  AttemptLedger(int capacity) {
    this.seen = new LinkedHashMap<>(16, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
        return size() > capacity;
      }
    };
  }

  /**
   * A new receive of {@code messageId}: its attempt — {@code receiveCount} (SQS's
   * {@code ApproximateReceiveCount}) less the receives that ended without a handler run, plus the
   * runs in process; at least 1 — and whether it is an unaccounted redelivery (see the class
   * description). Remembers the message from then on.
   */
  synchronized Attempt receive(String messageId, int receiveCount) {
    Seen before = seen.get(messageId);
    boolean unaccounted = receiveCount > 1 && (before == null || before.running || before.flagged);
    Seen now = before != null ? before : new Seen();
    now.running = false;
    now.flagged |= unaccounted;
    seen.put(messageId, now);
    return new Attempt(Math.max(1, receiveCount - now.adjustment), unaccounted);
  }

  /** Records one receive of {@code messageId} that ended without a handler run. */
  synchronized void notRun(String messageId) {
    Seen s = entry(messageId);
    s.adjustment++;
    s.running = false;
  }

  /** Records one more handler run of {@code messageId} within the same receive. */
  synchronized void ranAgain(String messageId) {
    entry(messageId).adjustment--;
  }

  /** The handler of {@code messageId} is about to run: until {@link #ended}, nobody knows how it ends. */
  synchronized void started(String messageId) {
    entry(messageId).running = true;
  }

  /**
   * The pipeline returned (or threw something other than a {@link VirtualMachineError}) for
   * {@code messageId}: how its run ended is known, and SQS was told or will show it again.
   */
  synchronized void ended(String messageId) {
    Seen s = seen.get(messageId);
    if (s != null) {
      s.running = false;
    }
  }

  synchronized int size() {
    return seen.size();
  }

  private Seen entry(String messageId) {
    return seen.computeIfAbsent(messageId, id -> new Seen());
  }
}
