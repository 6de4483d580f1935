package io.idem.sqs;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Receives of a message that ended without a handler run, per {@code MessageId}: handed back
 * unstarted (the rest of a FIFO group, a batch at close or after a poll error, a message released
 * at shutdown or during a store outage) or left to reappear because its visibility was too close
 * to running out. SQS counts each of them in {@code ApproximateReceiveCount}; this consumer
 * subtracts them, and adds the retries it ran in process without a new receive (a FIFO message
 * retried ahead of the rest of its group), so that the attempt it reports is the number of
 * handler runs (issue 11: an attempt is a real try, not a receive).
 *
 * <p>Kept in memory, one ledger per queue URL in this JVM ({@link #forQueue(String)}), shared by
 * every consumer of that queue here (so a message one consumer hands back at close is not counted
 * against it by the next one), for the last {@value #CAPACITY} messages: a message handed back by
 * a consumer in another process, or before the JVM restarted, still counts those receives.
 * Thread-safe.
 */
final class AttemptLedger {
  static final int CAPACITY = RecentIds.CAPACITY;
  private static final Map<String, AttemptLedger> BY_QUEUE = new ConcurrentHashMap<>();

  /** The ledger of the queue at {@code queueUrl} in this JVM. */
  static AttemptLedger forQueue(String queueUrl) {
    return BY_QUEUE.computeIfAbsent(queueUrl, url -> new AttemptLedger());
  }

  private final Map<String, Integer> adjustment = new LinkedHashMap<>(16, 0.75f, true) {
    private static final long serialVersionUID = 1L;

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Integer> eldest) {
      return size() > CAPACITY;
    }
  };

  /** Records one receive of {@code messageId} that ended without a handler run. */
  synchronized void notRun(String messageId) {
    adjustment.merge(messageId, 1, Integer::sum);
  }

  /** Records one more handler run of {@code messageId} within the same receive. */
  synchronized void ranAgain(String messageId) {
    adjustment.merge(messageId, -1, Integer::sum);
  }

  /**
   * The attempt a receive stands for: {@code receiveCount} (SQS's {@code ApproximateReceiveCount})
   * less the receives that ended without a handler run, plus the runs in process; at least 1.
   */
  synchronized int attempt(String messageId, int receiveCount) {
    return Math.max(1, receiveCount - adjustment.getOrDefault(messageId, 0));
  }
}
