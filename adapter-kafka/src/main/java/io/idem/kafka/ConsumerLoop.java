package io.idem.kafka;

import io.idem.IdempotentConsumer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that owns the {@code KafkaConsumer} (which is not thread-safe): polls, runs each
 * partition's records through the pipeline in partition order ({@link PartitionRunner}: one by
 * one, or in runs of up to {@link KafkaConsumerConfig#maxBatchSize()} per transaction), commits
 * settled offsets (once {@link KafkaConsumerConfig#commitInterval()}, 100 ms by default, has passed
 * since the last commit: checked after each record or batch settled, after each poll, and the poll
 * waits no longer than the next commit is due; zero: after each poll), pauses partitions for
 * retry backoffs, and commits on revocation and on close. Every consumer call happens on this
 * thread except {@link Consumer#wakeup()}, which Kafka documents as safe from any thread.
 */
final class ConsumerLoop implements Runnable, ConsumerRebalanceListener {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);
  private static final Duration POLL_FAILURE_PAUSE = Duration.ofSeconds(1);
  /** Longest poll while workers run: how late a finished run's partition is resumed at most. */
  private static final Duration WORKER_CHECK_INTERVAL = Duration.ofMillis(5);
  /**
   * How long the loop may still spend committing and leaving the group once close() interrupted
   * it; close() waits {@link io.idem.spi.AdapterWorker#AFTER_INTERRUPT} for it.
   */
  static final Duration AFTER_INTERRUPT_GRACE = Duration.ofSeconds(3);
  /**
   * Offset metadata of a clean handover (revocation or close with nothing in a handler): the next
   * owner has no redelivery window to flag.
   */
  static final String CLEAN = "idem:clean";
  /**
   * Offset metadata committed at assignment where the committed offset was {@link #CLEAN} or
   * absent: this consumer may be in a handler from now on.
   */
  static final String OWNED = "idem:owned";

  private final Consumer<byte[], byte[]> consumer;
  private final DeadLetterPublisher deadLetters;
  private final KafkaConsumerConfig config;
  private final String groupId;
  private final long batchBudgetNanos;
  private final PartitionProgress progress = new PartitionProgress();
  private final PartitionRunner runner;
  /** The worker pool when {@link KafkaConsumerConfig#concurrency()} is above 1, else null. */
  private final @Nullable PartitionWorkers workers;
  /** What a run on this thread does to the consumer: at once. */
  private final PartitionRunner.Actions direct = new PartitionRunner.Actions() {
    @Override
    public void seek(TopicPartition partition, ConsumerRecord<byte[], byte[]> record) {
      consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
    }

    @Override
    public void pauseFor(TopicPartition partition, Duration delay) {
      consumer.pause(List.of(partition));
      progress.pauseUntil(partition, System.nanoTime() + delay.toNanos());
    }

    @Override
    public void commitSettled() {
      ConsumerLoop.this.commitSettled("retry");
    }

    @Override
    public void settledSome() {
      // checked after each record (or batch), not once per poll: the lag from a record's database
      // commit to its offset commit is bounded by the interval plus one record's (batch's) time
      if (!config.commitInterval().isZero() && commitDue()) { // zero: after each poll, as documented
        ConsumerLoop.this.commitSettled("interval");
      }
    }
  };

  private volatile boolean closing;
  /** A record was handed back because close() interrupted its handler: the loop ends. */
  private boolean released;
  /** Set as soon as the loop ends, before the clients are closed (which may take a while). */
  private volatile boolean exited;
  private volatile long closeDeadlineNanos;
  private long lastCommitNanos = System.nanoTime();
  /** When shutdown() found the interrupt flag of close() set; 0 when it did not. */
  private long interruptedAtNanos;

  // ---- health, written by the loop thread, read by health() on any thread --------------------
  private final PollHealth pollHealth;
  /** What stopped the loop on its own (a poll error that cannot heal, a VM error); else null. */
  private volatile @Nullable Throwable failure;
  private volatile List<String> assigned = List.of();
  private final Set<TopicPartition> owned = new LinkedHashSet<>();
  private volatile int heldForRetry;

  ConsumerLoop(
      Consumer<byte[], byte[]> consumer,
      DeadLetterPublisher deadLetters,
      IdempotentConsumer<?> pipeline,
      KafkaConsumerConfig config,
      String groupId) {
    this.consumer = consumer;
    this.deadLetters = deadLetters;
    this.config = config;
    this.groupId = groupId;
    this.pollHealth = new PollHealth(consumer, config);
    // Half of max.poll.interval.ms for one batch leaves room for the commit and the next poll.
    this.batchBudgetNanos = config.maxPollInterval().toNanos() / 2;
    this.runner = new PartitionRunner(
        deadLetters, pipeline, progress, config.maxBatchSize(), config.shutdownTimeout(), () -> closing, groupId);
    this.workers = config.concurrency() == 1 ? null
        : new PartitionWorkers(config.concurrency(), groupId, consumer, progress, runner, () -> closing,
            batchBudgetNanos);
  }

  @Override
  public void run() {
    try {
      consumer.subscribe(config.topics(), this);
      while (!closing && !released) {
        if (workers != null) {
          collectRuns(workers);
        }
        resumeDuePartitions();
        ConsumerRecords<byte[], byte[]> records;
        try {
          records = consumer.poll(nextPollTimeout());
        } catch (WakeupException e) {
          continue; // close() woke the poll; the loop condition decides
        } catch (InterruptException e) {
          throw e;
        } catch (KafkaException e) {
          Optional<String> advice = PollFailures.fatalAdvice(e, groupId);
          if (advice.isPresent()) {
            failure = e;
            LOG.error("Kafka consumer of group {} stopped: poll failed with an error that polling again"
                + " cannot heal ({}); {}. Settled offsets are committed where the brokers allow it; records"
                + " not yet committed will be delivered again", groupId, e.toString(), advice.get(), e);
            break;
          }
          pollHealth.pollFailed();
          LOG.error("poll failed for group {}; polling again in {} ms", groupId, POLL_FAILURE_PAUSE.toMillis(), e);
          Thread.sleep(POLL_FAILURE_PAUSE.toMillis());
          continue;
        }
        pollHealth.polled();
        if (workers != null) {
          workers.dispatch(records);
        }
        Set<TopicPartition> unsettled = records.isEmpty() || workers != null ? Set.of() : handle(records);
        if (unsettled != null && workers == null) {
          // every record up to each partition's next fetch offset is settled, except in the
          // partitions that stopped (seeked back to their first unsettled record): commit the
          // consumer's position, which also covers transaction markers and aborted records
          records.nextOffsets().forEach((partition, next) -> {
            if (!unsettled.contains(partition)) {
              progress.caughtUp(partition, next);
            }
          });
        }
        heldForRetry = progress.pausedCount();
        if (commitDue()) {
          commitSettled("batch");
        }
      }
      if (released) {
        LOG.info("consumer loop of group {} stopped by close(): the record in hand was interrupted and"
            + " handed back uncommitted, not counted as an attempt", groupId);
      }
    } catch (InterruptException | InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.warn("consumer loop of group {} interrupted; records not yet committed will be delivered again", groupId);
    } catch (Throwable e) {
      // a VirtualMachineError from processing, or a failure of the loop itself (commit, rebalance)
      failure = e;
      LOG.error("consumer loop of group {} stopped by an unexpected error; records not yet committed"
          + " will be delivered again", groupId, e);
    } finally {
      exited = true;
      shutdown();
    }
  }

  /**
   * Runs the records through the pipeline, partition by partition, within the batch budget.
   * Returns the partitions whose records were not all settled (each seeked back to its first
   * unsettled record), or {@code null} when close() ended the batch early (records fetched after
   * the in-flight one are neither settled nor seeked back).
   */
  private @Nullable Set<TopicPartition> handle(ConsumerRecords<byte[], byte[]> records) {
    long deadline = System.nanoTime() + batchBudgetNanos;
    Set<TopicPartition> unsettled = new HashSet<>();
    for (TopicPartition partition : records.partitions()) {
      PartitionRunner.Ending ending =
          runner.run(partition, records.records(partition), direct, () -> closing || released, deadline);
      switch (ending) {
        case SETTLED -> { }
        case ABANDONED -> {
          return null; // close(): records fetched after the in-flight one are neither settled nor sought back
        }
        case RELEASED -> {
          released = true;
          return null;
        }
        default -> unsettled.add(partition); // sought back: its later records come again
      }
    }
    return (closing || released) ? null : unsettled;
  }

  /** Does what the finished worker runs asked ({@link PartitionWorkers#collect}), commits if asked. */
  private void collectRuns(PartitionWorkers pool) {
    PartitionWorkers.Collected collected = pool.collect(owned, closing);
    released |= collected.released();
    if (collected.commit()) {
      commitSettled("retry");
    }
  }

  /**
   * Whether the consumer is connected as far as its client knows ({@link PollHealth#connected});
   * thread-safe.
   */
  boolean connected() {
    return !exited && pollHealth.connected();
  }

  /** The assigned partitions as {@code topic-partition}; thread-safe. */
  List<String> assignedPartitions() {
    return assigned;
  }

  /** When the last poll returned without an error, or null; thread-safe. */
  @Nullable Instant lastPollAt() {
    return pollHealth.lastPollAt();
  }

  /** Records held back for a retry backoff: one per partition paused for it; thread-safe. */
  int heldForRetry() {
    return exited ? 0 : heldForRetry;
  }

  /** What stopped the loop on its own, or null; thread-safe. */
  @Nullable Throwable failure() {
    return failure;
  }

  private void publishAssignment() {
    assigned = owned.stream().map(TopicPartition::toString).toList();
    heldForRetry = progress.pausedCount();
  }

  private void resumeDuePartitions() {
    List<TopicPartition> due = progress.dueForResume(System.nanoTime());
    if (!due.isEmpty()) {
      Set<TopicPartition> owned = consumer.assignment();
      List<TopicPartition> resume = due.stream().filter(owned::contains).toList();
      if (!resume.isEmpty()) {
        consumer.resume(resume);
      }
    }
  }

  /** Whether the commit interval has passed since the last commit. */
  private boolean commitDue() {
    return System.nanoTime() - lastCommitNanos >= config.commitInterval().toNanos();
  }

  private Duration nextPollTimeout() {
    long max = config.pollTimeout().toNanos();
    if (workers != null && workers.anyBusy()) {
      max = Math.min(max, WORKER_CHECK_INTERVAL.toNanos()); // collect finished runs soon
    }
    if (!config.commitInterval().isZero() && progress.anyToCommit(owned)) {
      // settled offsets wait for their commit at most the interval, not a whole idle poll
      max = Math.min(max, Math.max(0, lastCommitNanos + config.commitInterval().toNanos() - System.nanoTime()));
    }
    long untilResume = progress.nanosUntilNextResume(System.nanoTime()).orElse(max);
    return Duration.ofNanos(Math.min(max, untilResume));
  }

  /** Commits settled offsets of every owned partition. */
  private void commitSettled(String why) {
    commit(progress.toCommit(consumer.assignment()), why);
    lastCommitNanos = System.nanoTime();
  }

  /** Commits {@code offsets}; returns whether they were committed (true when empty). */
  private boolean commit(Map<TopicPartition, OffsetAndMetadata> offsets, String why) {
    if (offsets.isEmpty()) {
      return true;
    }
    for (int tries = 1; ; tries++) {
      try {
        if (closing) {
          consumer.commitSync(offsets, remaining()); // close() is bounded by shutdownTimeout
        } else {
          consumer.commitSync(offsets); // bounded by default.api.timeout.ms
        }
        progress.committed(offsets);
        LOG.debug("committed {} ({})", offsets, why);
        return true;
      } catch (WakeupException e) {
        // close() called wakeup() while we were not polling; the flag is cleared now
        if (tries >= 2) {
          LOG.warn("offsets {} not committed ({}): woken up twice; will retry", offsets, why);
          return false;
        }
      } catch (InterruptException e) {
        throw e;
      } catch (KafkaException e) {
        LOG.warn("offsets {} not committed ({}): {}; their records will be delivered again and"
            + " skipped as duplicates unless a later commit covers them", offsets, why, e.toString());
        return false;
      }
    }
  }

  // ---- rebalance callbacks: called by the consumer on this thread, inside poll/close ----------

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    boolean ended = finishRuns(partitions, "revoked");
    if (ended && failure == null) {
      // nothing of theirs is in a handler (the loop is in poll, the workers ended): tell the next
      // owner it has no redelivery window to flag
      commitClean(partitions, "revoke");
    } else {
      commit(progress.toCommit(partitions), "revoke");
    }
    progress.forget(partitions);
    owned.removeAll(partitions);
    publishAssignment();
    if (!partitions.isEmpty()) {
      LOG.info("group {}: partitions revoked {}", groupId, partitions);
    }
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> partitions) {
    LOG.warn("group {}: partitions lost {} (settled offsets not committed will be delivered again)",
        groupId, partitions);
    finishRuns(partitions, "lost");
    progress.forget(partitions);
    owned.removeAll(partitions);
    publishAssignment();
  }

  /**
   * Ends the worker runs of {@code partitions} ({@link PartitionWorkers#finish}) before they go;
   * returns whether they all ended.
   */
  private boolean finishRuns(Collection<TopicPartition> partitions, String why) {
    if (workers != null && !partitions.isEmpty()) {
      return workers.finish(partitions, why);
    }
    return true;
  }

  /**
   * Commits {@code partitions} at what is settled (or their committed offset) with {@link
   * #CLEAN}: no record at or after it is in a handler, so the next owner flags nothing. Only for
   * partitions whose committed offset is known; best effort (a failure leaves the next owner a
   * window to flag, which costs round trips, never a wrong outcome).
   */
  private void commitClean(Collection<TopicPartition> partitions, String why) {
    Map<TopicPartition, OffsetAndMetadata> toCommit = progress.toCommit(partitions);
    Map<TopicPartition, OffsetAndMetadata> clean = new HashMap<>();
    for (TopicPartition partition : partitions) {
      OffsetAndMetadata settled = toCommit.get(partition);
      if (settled != null) {
        clean.put(partition, new OffsetAndMetadata(settled.offset(), settled.leaderEpoch(), CLEAN));
      } else if (!progress.committedClean(partition)) {
        progress.committedOffset(partition).ifPresent(offset ->
            clean.put(partition, new OffsetAndMetadata(offset, CLEAN)));
      }
    }
    if (commit(clean, why)) {
      progress.markedClean(clean.keySet());
    }
  }

  /**
   * Reads the committed offsets of the newly assigned partitions and decides, per partition,
   * whether the records from there on may have been in a handler of an owner that died (docs/BROKERS.md,
   * Kafka "Process deaths"):
   *
   * <ul>
   *   <li>committed with {@link #CLEAN} (a clean revocation or close), or nothing committed: no
   *       owner can be inside a handler — every owner marks a partition {@link #OWNED} before its
   *       first record runs. The partition is marked {@link #OWNED} now (one commit per assignment
   *       of such partitions), so that if this consumer dies the next owner knows it;
   *   <li>anything else (an owner's ordinary commit, {@link #OWNED}, another client's offset):
   *       the partition's redelivery window opens ({@link PartitionProgress#openWindow}).
   * </ul>
   *
   * When the committed offsets cannot be read every partition gets a window (costs round trips,
   * never a wrong outcome).
   */
  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    progress.forget(partitions);
    owned.addAll(partitions);
    publishAssignment();
    if (partitions.isEmpty()) {
      return;
    }
    LOG.info("group {}: partitions assigned {}", groupId, partitions);
    Map<TopicPartition, OffsetAndMetadata> committed;
    try {
      committed = consumer.committed(new HashSet<>(partitions));
    } catch (WakeupException | InterruptException e) {
      throw e;
    } catch (KafkaException e) {
      LOG.debug("committed offsets of {} not read: {}; their records from the committed offset on are"
          + " counted in the store before their handlers run", partitions, e.toString());
      partitions.forEach(partition -> progress.openWindow(partition, config.maxBatchSize()));
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> marks = new HashMap<>();
    List<TopicPartition> windows = new ArrayList<>();
    for (TopicPartition partition : partitions) {
      OffsetAndMetadata offset = committed.get(partition);
      if (offset != null) {
        progress.knownCommitted(partition, offset.offset());
      }
      if (offset != null && !CLEAN.equals(offset.metadata())) {
        progress.openWindow(partition, config.maxBatchSize());
        windows.add(partition);
        continue;
      }
      try {
        marks.put(partition, offset != null
            ? new OffsetAndMetadata(offset.offset(), offset.leaderEpoch(), OWNED)
            : new OffsetAndMetadata(consumer.position(partition), OWNED));
      } catch (WakeupException | InterruptException e) {
        throw e;
      } catch (NoOffsetForPartitionException e) {
        LOG.debug("group {}: {} has no committed offset and no reset policy; the poll reports it", groupId, partition);
      } catch (KafkaException e) {
        LOG.warn("group {}: the position of {} is not known ({}); it is not marked as owned, so a"
            + " process death in its first handlers before an offset commit is not counted", groupId,
            partition, e.toString());
      }
    }
    if (!windows.isEmpty()) {
      LOG.info("group {}: {} not handed over cleanly (a previous owner may have died in a handler): their"
          + " records from the committed offset on are counted in the store before their handlers run,"
          + " one at a time, until one is applied", groupId, windows);
    }
    if (!marks.isEmpty()) {
      if (!commit(marks, "owned")) {
        LOG.warn("group {}: {} not marked as owned; a process death in their first handlers before an"
            + " offset commit is not counted", groupId, marks.keySet());
      }
      lastCommitNanos = System.nanoTime();
    }
  }

  // ---- shutdown ----------------------------------------------------------------------------------

  /** Asks the loop to stop after the in-flight record; safe from any thread. */
  void requestClose(long deadlineNanos) {
    closeDeadlineNanos = deadlineNanos;
    closing = true;
    consumer.wakeup();
  }

  /** True once the loop ended, for whatever reason, even while its clients are still closing. */
  boolean hasExited() {
    return exited;
  }

  private void shutdown() {
    // close() interrupts the loop after shutdownTimeout: the Kafka clients refuse to work while
    // the flag is set, so it is cleared to commit what was settled and leave the group, within
    // the grace close() still waits, and set again at the end
    boolean interrupted = Thread.interrupted();
    if (interrupted) {
      interruptedAtNanos = System.nanoTime();
    }
    try {
      if (workers != null) {
        interrupted |= workers.close(interrupted, this::remaining, () -> {
          interruptedAtNanos = interruptedAtNanos != 0 ? interruptedAtNanos : System.nanoTime();
        });
        try {
          collectRuns(workers);
        } catch (RuntimeException | Error e) {
          LOG.warn("group {}: a worker failed while closing: {}", groupId, e.toString());
        }
      }
      try {
        if (failure == null && (workers == null || !workers.anyBusy())) {
          // closed, not stopped by an error, nothing left in a handler: the next owner flags nothing
          commitClean(consumer.assignment(), "close");
          lastCommitNanos = System.nanoTime();
        } else {
          commitSettled("close");
        }
      } catch (RuntimeException e) {
        LOG.warn("final offset commit of group {} failed: {}", groupId, e.toString());
      }
      try {
        consumer.close(CloseOptions.timeout(remaining()));
      } catch (RuntimeException e) {
        LOG.warn("closing the Kafka consumer of group {} failed: {}", groupId, e.toString());
      }
      try {
        deadLetters.close(remaining());
      } catch (RuntimeException e) {
        LOG.warn("closing the dead-letter producer of group {} failed: {}", groupId, e.toString());
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private Duration remaining() {
    if (!closing) {
      return config.shutdownTimeout();
    }
    long left = closeDeadlineNanos - System.nanoTime();
    if (interruptedAtNanos != 0) {
      // past shutdownTimeout: close() waits AFTER_INTERRUPT more for the clients to close
      left = Math.max(left, interruptedAtNanos + AFTER_INTERRUPT_GRACE.toNanos() - System.nanoTime());
    }
    return Duration.ofNanos(Math.max(0, left));
  }
}
