package io.idem.kafka;

import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ArrayList;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * What the consumer loop knows per partition: the next offset to commit (one past the last
 * settled record), the offset last committed, the delivery attempt of a record being retried, and
 * when a paused partition resumes. Thread-safe (every method synchronized): with {@link
 * KafkaConsumerConfig#concurrency()} above 1 the workers record what they settle while the polling
 * thread commits.
 *
 * <p>Offsets only move forward: a settled offset below what is already settled or committed is
 * ignored, and {@link #toCommit} returns only offsets above the committed ones, so a commit never
 * lowers a partition's committed offset.
 */
final class PartitionProgress {
  private final Map<TopicPartition, OffsetAndMetadata> settled = new HashMap<>();
  private final Map<TopicPartition, Long> committed = new HashMap<>();
  private final Map<TopicPartition, long[]> attempts = new HashMap<>();
  private final Map<TopicPartition, Long> resumeAtNanos = new LinkedHashMap<>();

  /** The attempt the record at {@code offset} is on: one more than its last failure, else 1. */
  synchronized int attemptFor(TopicPartition partition, long offset) {
    long[] last = attempts.get(partition);
    return last != null && last[0] == offset ? (int) Math.min(Integer.MAX_VALUE, last[1] + 1) : 1;
  }

  /**
   * The record at {@code offset} will be delivered again; {@code attempt} is the last attempt that
   * counted (0 when none did, e.g. only store outages so far), so the next one is
   * {@code attempt + 1}.
   */
  synchronized void failed(TopicPartition partition, long offset, int attempt) {
    attempts.put(partition, new long[] {offset, attempt});
  }

  /** The record at {@code offset} is settled (processed, duplicate or dead-lettered). */
  synchronized void settled(TopicPartition partition, long offset, Optional<Integer> leaderEpoch) {
    attempts.remove(partition);
    long next = offset + 1;
    OffsetAndMetadata current = settled.get(partition);
    if (current == null || current.offset() < next) {
      settled.put(partition, new OffsetAndMetadata(next, leaderEpoch, ""));
    }
  }

  /**
   * Every record before {@code next} is settled (or was never handed out: a transaction marker, a
   * record of an aborted transaction under {@code read_committed}): the consumer's next fetch
   * offset becomes the offset to commit, if it is ahead. Called only when no record before it is
   * unsettled.
   */
  synchronized void caughtUp(TopicPartition partition, OffsetAndMetadata next) {
    OffsetAndMetadata current = settled.get(partition);
    if (current == null || current.offset() < next.offset()) {
      settled.put(partition, new OffsetAndMetadata(next.offset(), next.leaderEpoch(), ""));
    }
  }

  /** How many partitions are paused for a retry backoff (each holds one record back). */
  synchronized int pausedCount() {
    return resumeAtNanos.size();
  }

  /** The broker's committed offset at assignment, so that no commit goes below it. */
  synchronized void knownCommitted(TopicPartition partition, long offset) {
    committed.merge(partition, offset, Math::max);
  }

  /** Settled offsets above the committed ones, for partitions in {@code owned}. */
  synchronized Map<TopicPartition, OffsetAndMetadata> toCommit(Collection<TopicPartition> owned) {
    Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
    for (TopicPartition partition : owned) {
      OffsetAndMetadata next = settled.get(partition);
      if (next != null && next.offset() > committed.getOrDefault(partition, -1L)) {
        out.put(partition, next);
      }
    }
    return out;
  }

  /** Whether {@link #toCommit} of {@code owned} would return anything. */
  synchronized boolean anyToCommit(Collection<TopicPartition> owned) {
    for (TopicPartition partition : owned) {
      OffsetAndMetadata next = settled.get(partition);
      if (next != null && next.offset() > committed.getOrDefault(partition, -1L)) {
        return true;
      }
    }
    return false;
  }

  /** {@code offsets} were committed. */
  synchronized void committed(Map<TopicPartition, OffsetAndMetadata> offsets) {
    offsets.forEach((partition, offset) -> committed.merge(partition, offset.offset(), Math::max));
  }

  /** The committed offset last known for {@code partition}, if any. */
  synchronized OptionalLong committedOffset(TopicPartition partition) {
    Long offset = committed.get(partition);
    return offset == null ? OptionalLong.empty() : OptionalLong.of(offset);
  }

  /** {@code partition} is paused until {@code nanoTime}. */
  synchronized void pauseUntil(TopicPartition partition, long nanoTime) {
    resumeAtNanos.put(partition, nanoTime);
  }

  synchronized boolean isPaused(TopicPartition partition) {
    return resumeAtNanos.containsKey(partition);
  }

  /** Removes and returns the paused partitions due at {@code nanoTime}. */
  synchronized List<TopicPartition> dueForResume(long nanoTime) {
    List<TopicPartition> due = new ArrayList<>();
    for (Iterator<Map.Entry<TopicPartition, Long>> it = resumeAtNanos.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<TopicPartition, Long> entry = it.next();
      if (entry.getValue() - nanoTime <= 0) {
        due.add(entry.getKey());
        it.remove();
      }
    }
    return due;
  }

  /** Nanoseconds from {@code nanoTime} until the next paused partition resumes, if any. */
  synchronized OptionalLong nanosUntilNextResume(long nanoTime) {
    return resumeAtNanos.values().stream()
        .mapToLong(at -> Math.max(0, at - nanoTime))
        .min();
  }

  /** Forgets everything about {@code partitions} (revoked, lost or newly assigned). */
  synchronized void forget(Collection<TopicPartition> partitions) {
    for (TopicPartition partition : partitions) {
      settled.remove(partition);
      committed.remove(partition);
      attempts.remove(partition);
      resumeAtNanos.remove(partition);
    }
  }
}
