package io.idem.kafka;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ArrayList;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
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
 *
 * <p>It also keeps each partition's <em>redelivery window</em> ({@link #openWindow}): after an
 * assignment that was not handed over cleanly, the records from the committed offset on may have
 * been in a handler of an owner that died, and are flagged {@link
 * io.idem.InboundMessage#unaccountedRedelivery()} ({@link #flag}) until the window closes.
 */
final class PartitionProgress {
  private final Map<TopicPartition, OffsetAndMetadata> settled = new HashMap<>();
  private final Map<TopicPartition, Long> committed = new HashMap<>();
  private final Map<TopicPartition, long[]> attempts = new HashMap<>();
  private final Map<TopicPartition, Long> resumeAtNanos = new LinkedHashMap<>();
  private final Map<TopicPartition, Window> windows = new HashMap<>();
  private final Set<TopicPartition> clean = new HashSet<>();

  /**
   * A partition's redelivery window. The previous owner ran the partition in offset order, one
   * record or one batch (at most {@code batch} records, in one transaction) at a time, and
   * committed no offset past a record it had not settled: when it died, it was inside the handler
   * of at most one record, or of one batch, at or after the committed offset; every record before
   * it was settled (we find it a duplicate, or dead-letter it again from its recorded decision),
   * and none after it was started. So the window stays open over the duplicates and dead letters,
   * and once a record is applied fresh here ({@code PROCESSED}: it was not applied before) it
   * covers the {@code batch - 1} records after it (the rest of a batch that may have started
   * before it), then closes.
   */
  private static final class Window {
    final int batch;
    /** The highest offset flagged; a record at or below it ran here already (a retry: not flagged). */
    long highestFlagged = -1;
    /** Records still flagged after the first one applied fresh; -1 while none was. */
    int remaining = -1;

    Window(int batch) {
      this.batch = batch;
    }
  }

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
    offsets.forEach((partition, offset) -> {
      committed.merge(partition, offset.offset(), Math::max);
      clean.remove(partition);
    });
  }

  /** {@code partitions} were just committed as a clean handover ({@link ConsumerLoop#CLEAN}). */
  synchronized void markedClean(Collection<TopicPartition> partitions) {
    clean.addAll(partitions);
  }

  /** Whether {@code partition}'s last commit here was a clean handover, with nothing settled since. */
  synchronized boolean committedClean(TopicPartition partition) {
    return clean.contains(partition) && !anyToCommit(List.of(partition));
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

  /**
   * {@code partition} was assigned and its previous owner may have died inside a handler: the
   * records fetched from the committed offset on are flagged ({@link #flag}) until one was applied
   * fresh and {@code batch - 1} more were flagged (the consumer's {@code maxBatchSize}, 1 in
   * per-message mode).
   */
  synchronized void openWindow(TopicPartition partition, int batch) {
    windows.put(partition, new Window(Math.max(1, batch)));
  }

  /** Whether {@code partition}'s redelivery window is open: its records are run one at a time. */
  synchronized boolean inWindow(TopicPartition partition) {
    return windows.containsKey(partition);
  }

  /**
   * Whether the record at {@code offset}, about to be handed to the pipeline, is an unaccounted
   * redelivery: its partition's window is open and it did not run here yet (a retry of a record
   * this consumer ran is counted in memory, {@link #attemptFor}, never flagged). Called once per
   * run of a record, in offset order, right before the run.
   */
  synchronized boolean flag(TopicPartition partition, long offset) {
    Window window = windows.get(partition);
    if (window == null || offset <= window.highestFlagged) {
      return false;
    }
    if (window.remaining == 0) {
      windows.remove(partition); // every record the dead owner may have started was flagged
      return false;
    }
    window.highestFlagged = offset;
    if (window.remaining > 0) {
      window.remaining--;
    }
    return true;
  }

  /**
   * The record at {@code offset} was applied fresh ({@link io.idem.ProcessingOutcome#PROCESSED}):
   * no record after the batch it may have been in was started by a previous owner.
   */
  synchronized void appliedFresh(TopicPartition partition, long offset) {
    Window window = windows.get(partition);
    if (window != null && window.remaining < 0 && offset <= window.highestFlagged) {
      window.remaining = window.batch - 1;
      if (window.remaining == 0) {
        windows.remove(partition);
      }
    }
  }

  /** Forgets everything about {@code partitions} (revoked, lost or newly assigned). */
  synchronized void forget(Collection<TopicPartition> partitions) {
    for (TopicPartition partition : partitions) {
      settled.remove(partition);
      committed.remove(partition);
      attempts.remove(partition);
      resumeAtNanos.remove(partition);
      windows.remove(partition);
      clean.remove(partition);
    }
  }
}
