package io.idem.kafka;

import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import io.idem.spi.SettlementRecord;
import java.time.Duration;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * Settles one Kafka record for the pipeline, on the consumer loop's thread. Kafka has no per-record
 * acknowledgement, only a committed offset per partition, so:
 *
 * <ul>
 *   <li>{@link #ack()} marks the record settled; the consumer loop commits offset + 1 with
 *       {@code commitSync} after the batch (or the commit interval), never before the record's
 *       database transaction ended and never below an offset already committed. If the process
 *       dies first, the record is delivered again and the store skips it as a duplicate.
 *   <li>{@link #retry(Duration)} leaves the offset where it is; the loop commits what is settled,
 *       seeks the partition back to this record and pauses it for {@code delay} while it keeps
 *       polling, so the consumer stays in its group however long the backoff.
 *   <li>{@link #retryWhenStoreAvailable(Duration)} takes the same seek-back-and-pause path, but
 *       does not count as a delivery attempt: the record comes back with the attempt it had, so a
 *       database outage of any length neither uses up the retry policy's attempts nor grows the
 *       backoff.
 *   <li>{@link #release()} (the consumer is closing and interrupted the handler): nothing is
 *       committed for the record and no attempt is counted; the loop stops taking records, commits
 *       what was settled before it, and leaves the group, so the record goes to the partition's
 *       next owner (or this group's next consumer) as if it had never been started. (An interrupt
 *       that does not come from {@code close()} is cleared with a WARN and the record is processed
 *       again, still not counted.)
 *   <li>{@link #deadLetter(DeadLetterReason)} publishes a copy (same key, value and headers, plus
 *       {@link DeadLetterReason#toHeaders()} and the original topic, partition, offset and
 *       timestamp) to the dead-letter topic and waits for the broker's {@code acks=all}
 *       acknowledgement; only then is the record settled. If the send fails it throws, the offset
 *       stays, and the record comes back after a backoff.
 * </ul>
 *
 * <p>Not thread-safe; one instance per delivery, used once.
 */
final class KafkaAcknowledgement implements Acknowledgement {

  /** What the pipeline decided. */
  enum Decision {
    NONE,
    ACK,
    RETRY,
    /** Handed back at shutdown: not committed, not an attempt, and the loop stops. */
    RELEASED,
    DEAD_LETTERED
  }

  private final ConsumerRecord<byte[], byte[]> record;
  private final DeadLetterPublisher deadLetters;
  private Decision decision = Decision.NONE;
  private final SettlementRecord settlement = new SettlementRecord();
  private @Nullable Duration delay;
  private boolean countsAsAttempt = true;

  KafkaAcknowledgement(ConsumerRecord<byte[], byte[]> record, DeadLetterPublisher deadLetters) {
    this.record = record;
    this.deadLetters = deadLetters;
  }

  @Override
  public void ack() {
    settle(Decision.ACK);
  }

  /**
   * @throws IllegalArgumentException if {@code delay} is negative
   */
  @Override
  public void retry(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    if (delay.isNegative()) {
      throw new IllegalArgumentException("delay must not be negative, but was " + delay);
    }
    settle(Decision.RETRY);
    this.delay = delay;
  }

  /**
   * Like {@link #retry(Duration)}, but the record keeps its delivery attempt.
   *
   * @throws IllegalArgumentException if {@code delay} is negative
   */
  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    retry(delay);
    countsAsAttempt = false;
  }

  /**
   * Leaves the record uncommitted without counting an attempt, and stops the consumer loop (see
   * the class description). Makes no call to Kafka: the thread's interrupt flag is set.
   */
  @Override
  public void release() {
    settle(Decision.RELEASED);
    countsAsAttempt = false;
  }

  /**
   * @throws io.idem.IdempotencyException when the dead-letter topic did not acknowledge the copy;
   *     the record is then not settled
   */
  @Override
  public void deadLetter(DeadLetterReason reason) {
    Objects.requireNonNull(reason, "reason");
    if (decision != Decision.NONE) {
      throw new IllegalStateException("record " + record.topic() + "-" + record.partition() + "@"
          + record.offset() + " was already settled as " + decision);
    }
    deadLetters.publish(record, reason);
    decision = Decision.DEAD_LETTERED;
    settlement.markSettled();
  }

  private void settle(Decision next) {
    if (decision != Decision.NONE) {
      throw new IllegalStateException("record " + record.topic() + "-" + record.partition() + "@"
          + record.offset() + " was already settled as " + decision);
    }
    decision = next;
    settlement.markSettled(); // decided: the loop acts on the decision, nothing else hands it back
  }

  /** Settled once any decision was made ({@link io.idem.spi.AdapterWorker#survive} reads it). */
  SettlementRecord settlement() {
    return settlement;
  }

  Decision decision() {
    return decision;
  }

  /**
   * Whether a {@link Decision#RETRY} uses up a delivery attempt: false when the store was
   * unavailable.
   */
  boolean countsAsAttempt() {
    return countsAsAttempt;
  }

  /** The backoff asked by {@link #retry(Duration)}; zero otherwise. */
  Duration delay() {
    return delay == null ? Duration.ZERO : delay;
  }
}
