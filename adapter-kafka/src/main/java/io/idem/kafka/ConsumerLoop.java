package io.idem.kafka;

import io.idem.IdempotentConsumer;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
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
 * settled offsets (after each poll, or per {@link KafkaConsumerConfig#commitInterval()}), pauses partitions for
 * retry backoffs, and commits on revocation and on close. Every consumer call happens on this
 * thread except {@link Consumer#wakeup()}, which Kafka documents as safe from any thread.
 */
final class ConsumerLoop implements Runnable, ConsumerRebalanceListener {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);
  private static final Duration POLL_FAILURE_PAUSE = Duration.ofSeconds(1);
  private static final Duration HEARTBEAT_SAMPLE_INTERVAL = Duration.ofSeconds(1);
  /**
   * How long the loop may still spend committing and leaving the group once close() interrupted
   * it; close() waits {@link KafkaIdempotentConsumer#AFTER_INTERRUPT} for it.
   */
  static final Duration AFTER_INTERRUPT_GRACE = Duration.ofSeconds(3);

  private final Consumer<byte[], byte[]> consumer;
  private final DeadLetterPublisher deadLetters;
  private final IdempotentConsumer<?> pipeline;
  private final KafkaConsumerConfig config;
  private final String groupId;
  private final long batchBudgetNanos;
  private final PartitionProgress progress = new PartitionProgress();
  private final PartitionRunner runner;
  private final CountDownLatch stopped = new CountDownLatch(1);

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
  private final long startedNanos = System.nanoTime();
  /** What stopped the loop on its own (a poll error that cannot heal, a VM error); else null. */
  private volatile @Nullable Throwable failure;
  /** The last poll threw; cleared by the next one that returns. */
  private volatile boolean pollFailed;
  private volatile long lastPollNanos;
  private volatile @Nullable Instant lastPollAt;
  /** Seconds since the last coordinator heartbeat was sent (-1: none yet), sampled after polls. */
  private volatile double heartbeatAgeSeconds = -1;
  private long heartbeatSampledNanos;
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
    this.pipeline = pipeline;
    this.config = config;
    this.groupId = groupId;
    // Half of max.poll.interval.ms for one batch leaves room for the commit and the next poll.
    this.batchBudgetNanos = config.maxPollInterval().toNanos() / 2;
    this.runner = new PartitionRunner(
        consumer, deadLetters, pipeline, progress, () -> commitSettled("retry"), () -> closing, groupId);
  }

  @Override
  public void run() {
    try {
      consumer.subscribe(config.topics(), this);
      while (!closing && !released) {
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
          pollFailed = true;
          LOG.error("poll failed for group {}; polling again in {} ms", groupId, POLL_FAILURE_PAUSE.toMillis(), e);
          Thread.sleep(POLL_FAILURE_PAUSE.toMillis());
          continue;
        }
        polled();
        Set<TopicPartition> unsettled = records.isEmpty() ? Set.of() : handle(records);
        if (unsettled != null) {
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
        if (System.nanoTime() - lastCommitNanos >= config.commitInterval().toNanos()) {
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
    boolean stop = false;
    Set<TopicPartition> unsettled = new HashSet<>();
    for (TopicPartition partition : records.partitions()) {
      List<ConsumerRecord<byte[], byte[]>> list = records.records(partition);
      for (int from = 0; from < list.size(); ) {
        if (closing || released) {
          return null; // finish only the in-flight work; the rest stays uncommitted for the next owner
        }
        if (stop || System.nanoTime() - deadline > 0) {
          // bounded work per poll: fetch the rest again after polling
          stop = true;
          unsettled.add(partition);
          runner.seek(partition, list.get(from));
          break;
        }
        int to = Math.min(list.size(), from + config.maxBatchSize());
        PartitionRunner.Ending ending = to - from == 1
            ? runner.one(partition, list.get(from))
            : runner.batch(partition, list.subList(from, to));
        if (ending != PartitionRunner.Ending.SETTLED) {
          released |= ending == PartitionRunner.Ending.RELEASED;
          unsettled.add(partition);
          break; // retried or unsettled: the partition was sought back; later records come again
        }
        from = to;
      }
    }
    return (closing || released) ? null : unsettled;
  }

  /** A poll returned: the health snapshot's connection facts. */
  private void polled() {
    long now = System.nanoTime();
    pollFailed = false;
    lastPollNanos = now;
    lastPollAt = Instant.now();
    if (now - heartbeatSampledNanos >= HEARTBEAT_SAMPLE_INTERVAL.toNanos()) {
      heartbeatSampledNanos = now;
      try {
        heartbeatAgeSeconds = consumer.metrics().entrySet().stream()
            .filter(e -> e.getKey().name().equals("last-heartbeat-seconds-ago"))
            .map(e -> e.getValue().metricValue())
            .filter(Number.class::isInstance)
            .mapToDouble(v -> ((Number) v).doubleValue())
            .findFirst()
            .orElse(-1);
      } catch (RuntimeException e) {
        heartbeatAgeSeconds = -1; // a wrapped consumer without metrics: judge by polls alone
      }
    }
  }

  /**
   * Whether the consumer is connected as far as its client knows: the loop runs, the last poll
   * returned without an error within {@code max.poll.interval.ms} (beyond it the client leaves the
   * group), and the last coordinator heartbeat was sent within {@code session.timeout.ms} (beyond
   * it the group coordinator has dropped the member; a consumer that never sent one gets that long
   * from its start to join). Thread-safe.
   */
  boolean connected() {
    if (exited || pollFailed || lastPollNanos == 0) {
      return false;
    }
    long now = System.nanoTime();
    if (now - lastPollNanos > config.maxPollInterval().toNanos()) {
      return false;
    }
    double session = config.sessionTimeout().toMillis() / 1000.0;
    double heartbeat = heartbeatAgeSeconds;
    if (heartbeat < 0 || heartbeat * 1e9 >= now - startedNanos) {
      return now - startedNanos <= config.sessionTimeout().toNanos(); // no heartbeat yet
    }
    return heartbeat <= session;
  }

  /** The assigned partitions as {@code topic-partition}; thread-safe. */
  List<String> assignedPartitions() {
    return assigned;
  }

  /** When the last poll returned without an error, or null; thread-safe. */
  @Nullable Instant lastPollAt() {
    return lastPollAt;
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

  private Duration nextPollTimeout() {
    long max = config.pollTimeout().toNanos();
    long untilResume = progress.nanosUntilNextResume(System.nanoTime()).orElse(max);
    return Duration.ofNanos(Math.min(max, untilResume));
  }

  /** Commits settled offsets of every owned partition. */
  private void commitSettled(String why) {
    commit(progress.toCommit(consumer.assignment()), why);
    lastCommitNanos = System.nanoTime();
  }

  private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, String why) {
    if (offsets.isEmpty()) {
      return;
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
        return;
      } catch (WakeupException e) {
        // close() called wakeup() while we were not polling; the flag is cleared now
        if (tries >= 2) {
          LOG.warn("offsets {} not committed ({}): woken up twice; will retry", offsets, why);
          return;
        }
      } catch (InterruptException e) {
        throw e;
      } catch (KafkaException e) {
        LOG.warn("offsets {} not committed ({}): {}; their records will be delivered again and"
            + " skipped as duplicates unless a later commit covers them", offsets, why, e.toString());
        return;
      }
    }
  }

  // ---- rebalance callbacks: called by the consumer on this thread, inside poll/close ----------

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
    commit(progress.toCommit(partitions), "revoke");
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
    progress.forget(partitions);
    owned.removeAll(partitions);
    publishAssignment();
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
    progress.forget(partitions);
    owned.addAll(partitions);
    publishAssignment();
    if (partitions.isEmpty()) {
      return;
    }
    LOG.info("group {}: partitions assigned {}", groupId, partitions);
    try {
      Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(partitions));
      committed.forEach((partition, offset) -> {
        if (offset != null) {
          progress.knownCommitted(partition, offset.offset());
        }
      });
    } catch (WakeupException | InterruptException e) {
      throw e;
    } catch (KafkaException e) {
      LOG.debug("committed offsets of {} not read: {}", partitions, e.toString());
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

  /** Waits for the loop to finish; returns whether it did within {@code timeout}. */
  boolean awaitStopped(Duration timeout) throws InterruptedException {
    return stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
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
      try {
        commitSettled("close");
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
      stopped.countDown();
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
