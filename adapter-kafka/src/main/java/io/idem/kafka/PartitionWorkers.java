package io.idem.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bounded pool that processes partitions side by side ({@link
 * KafkaConsumerConfig#concurrency()} above 1). The polling thread {@link #dispatch dispatches}
 * each partition's records of a poll as one run (the partition is paused meanwhile, so that the
 * next polls fetch none of it while the member keeps polling) and {@link #collect collects} the
 * finished runs, whose seeks, backoff pauses, resumes and commits it then makes itself: a worker
 * never touches the {@code KafkaConsumer}, which is not thread-safe. Every method is called on the
 * polling thread; the workers only run {@link PartitionRunner#run} and record into {@link Run}.
 */
final class PartitionWorkers {

  /**
   * One partition's run on a worker: what it asks of the consumer is recorded here and done by the
   * polling thread once {@link #done} is counted down.
   */
  static final class Run implements PartitionRunner.Actions {
    final TopicPartition partition;
    /** The partition's next fetch offset after the poll: committed when every record settled. */
    final OffsetAndMetadata next;
    final CountDownLatch done = new CountDownLatch(1);
    volatile boolean cancelled;
    private volatile PartitionRunner.@Nullable Ending ending;
    private volatile @Nullable Throwable failure;
    private volatile @Nullable OffsetAndMetadata seekTo;
    private volatile @Nullable Duration pause;
    private volatile boolean commit;

    Run(TopicPartition partition, OffsetAndMetadata next) {
      this.partition = partition;
      this.next = next;
    }

    @Override
    public void seek(TopicPartition p, ConsumerRecord<byte[], byte[]> record) {
      seekTo = new OffsetAndMetadata(record.offset(), record.leaderEpoch(), "");
    }

    @Override
    public void pauseFor(TopicPartition p, Duration delay) {
      pause = delay;
    }

    @Override
    public void commitSettled() {
      commit = true;
    }

    @Override
    public void settledSome() {
      // the polling thread commits on its own: it polls at most WORKER_CHECK_INTERVAL apart while
      // runs are in flight and checks the commit interval after each poll
    }

    PartitionRunner.@Nullable Ending ending() {
      return ending;
    }

    /** What the worker threw (a {@link VirtualMachineError}, or a bug); null normally. */
    @Nullable Throwable failure() {
      return failure;
    }

    @Nullable OffsetAndMetadata seekTo() {
      return seekTo;
    }

    @Nullable Duration pause() {
      return pause;
    }

    boolean commitRequested() {
      return commit;
    }
  }

  private static final AtomicInteger POOLS = new AtomicInteger();

  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);

  /** What {@link #collect} found: a run handed its record back to close(), a commit was asked. */
  record Collected(boolean released, boolean commit) {}

  private final ExecutorService pool;
  private final String groupId;
  private final Consumer<byte[], byte[]> consumer;
  private final PartitionProgress progress;
  private final PartitionRunner runner;
  private final BooleanSupplier closing;
  private final long budgetNanos;
  private final Map<TopicPartition, Run> inFlight = new HashMap<>();
  private final ConcurrentLinkedQueue<Run> finished = new ConcurrentLinkedQueue<>();

  PartitionWorkers(int threads, String groupId, Consumer<byte[], byte[]> consumer, PartitionProgress progress,
      PartitionRunner runner, BooleanSupplier closing, long budgetNanos) {
    int id = POOLS.incrementAndGet();
    AtomicInteger n = new AtomicInteger();
    this.pool = Executors.newFixedThreadPool(threads, task -> {
      Thread t = new Thread(task, "idem-kafka-" + groupId + "-" + id + "-worker-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.groupId = groupId;
    this.consumer = consumer;
    this.progress = progress;
    this.runner = runner;
    this.closing = closing;
    this.budgetNanos = budgetNanos;
  }

  /** Whether {@code partition} has a run in flight (not yet collected). */
  boolean busy(TopicPartition partition) {
    return inFlight.containsKey(partition);
  }

  /** Whether any run is in flight. */
  boolean anyBusy() {
    return !inFlight.isEmpty();
  }

  /** Hands each partition's records of the poll to a worker, pausing the partition meanwhile. */
  void dispatch(ConsumerRecords<byte[], byte[]> records) {
    Map<TopicPartition, OffsetAndMetadata> next = records.nextOffsets();
    for (TopicPartition partition : records.partitions()) {
      OffsetAndMetadata nextOffset = next.get(partition);
      if (nextOffset == null) { // Kafka gives the next offset of every partition in the poll
        throw new IllegalStateException("the poll has records of " + partition + " but no next offset");
      }
      consumer.pause(List.of(partition));
      submit(partition, records.records(partition), nextOffset);
    }
  }

  /**
   * Does what the finished runs of {@code owned} partitions asked of the consumer: seeks back,
   * backoff pauses, resumes (not while {@code closing}), and the offset of a partition whose
   * records all settled (the poll's next fetch offset, which also covers transaction markers).
   *
   * @throws Error what a worker threw (a {@link VirtualMachineError}), to stop the loop
   */
  Collected collect(Set<TopicPartition> owned, boolean closing) {
    boolean released = false;
    boolean commit = false;
    for (Run run : completed()) {
      Throwable failure = run.failure();
      if (failure instanceof Error e) {
        throw e;
      } else if (failure != null) {
        throw new IllegalStateException("a worker of group " + groupId + " failed", failure);
      }
      TopicPartition partition = run.partition;
      if (!owned.contains(partition)) {
        continue; // revoked or lost meanwhile: finished there
      }
      OffsetAndMetadata seekTo = run.seekTo();
      if (seekTo != null) {
        consumer.seek(partition, seekTo);
      }
      PartitionRunner.Ending ending = run.ending();
      if (ending == PartitionRunner.Ending.SETTLED) {
        progress.caughtUp(partition, run.next);
      }
      released |= ending == PartitionRunner.Ending.RELEASED;
      Duration pause = run.pause();
      if (pause != null && !pause.isZero()) {
        progress.pauseUntil(partition, System.nanoTime() + pause.toNanos()); // the loop resumes it when due
      } else if (!closing) {
        consumer.resume(List.of(partition));
      }
      commit |= run.commitRequested();
    }
    return new Collected(released, commit);
  }

  /** Runs {@code records} of {@code partition} on a worker; the caller has paused the partition. */
  private void submit(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> records, OffsetAndMetadata next) {
    Run run = new Run(partition, next);
    inFlight.put(partition, run);
    long deadline = System.nanoTime() + budgetNanos;
    pool.execute(() -> {
      try {
        run.ending = runner.run(partition, records, run, () -> run.cancelled || closing.getAsBoolean(), deadline);
      } catch (Throwable e) {
        run.failure = e;
      } finally {
        finished.add(run);
        run.done.countDown();
      }
    });
  }

  /** The runs finished since the last call, no longer in flight. */
  private List<Run> completed() {
    List<Run> out = new ArrayList<>();
    for (Run run; (run = finished.poll()) != null; ) {
      if (inFlight.get(run.partition) == run) {
        inFlight.remove(run.partition);
        out.add(run);
      }
    }
    return out;
  }

  /**
   * Stops the runs of {@code partitions} after their record or batch in hand and waits for them,
   * up to {@code timeout}; they are no longer in flight afterwards (their settled records are in
   * the progress). Returns whether they all ended in time.
   */
  private boolean cancelAndAwait(Collection<TopicPartition> partitions, Duration timeout) throws InterruptedException {
    List<Run> runs = new ArrayList<>();
    for (TopicPartition partition : partitions) {
      Run run = inFlight.remove(partition);
      if (run != null) {
        run.cancelled = true;
        runs.add(run);
      }
    }
    return await(runs, timeout);
  }

  /** Waits up to {@code timeout} for every run in flight (close() asked them to stop). */
  private boolean awaitAll(Duration timeout) throws InterruptedException {
    return await(new ArrayList<>(inFlight.values()), timeout);
  }

  private static boolean await(List<Run> runs, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Run run : runs) {
      if (!run.done.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Stops the runs of {@code partitions} (revoked or lost) after the record or batch in hand and
   * waits for them, within the poll's time budget (half of max.poll.interval.ms), so that what
   * they settled is committed and nothing of a partition is processed here once it may be another
   * member's. An interrupt while waiting (close() past its timeout) is kept for the loop to end.
   * Returns whether every run ended (none is left in a handler).
   */
  boolean finish(Collection<TopicPartition> partitions, String why) {
    try {
      if (!cancelAndAwait(partitions, Duration.ofNanos(budgetNanos))) {
        LOG.warn("group {}: work in flight on {} partitions {} did not end within {} ms; what it settles"
            + " later is not committed here (the next owner skips it as duplicates)", groupId, why,
            partitions, Duration.ofNanos(budgetNanos).toMillis());
        return false;
      }
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Lets the runs in flight end (each stops after the record or batch in hand: close() was asked)
   * within {@code remaining}; past it, or once the calling thread was interrupted, interrupts their
   * handlers (their records are handed back, not counted: {@link
   * io.idem.ProcessingOutcome#RELEASED}), calls {@code onInterrupt} and waits what remains (the
   * grace). Then stops the pool; the finished runs are left for {@link #completed()}.
   *
   * @return whether the calling thread was interrupted meanwhile (its flag is cleared, so that the
   *     clients can still commit)
   */
  boolean close(boolean alreadyInterrupted, Supplier<Duration> remaining, Runnable onInterrupt) {
    boolean interrupted = false;
    try {
      if (alreadyInterrupted || !awaitAll(remaining.get())) {
        pool.shutdownNow();
        onInterrupt.run();
        awaitAll(remaining.get());
      }
    } catch (InterruptedException e) {
      interrupted = true;
      pool.shutdownNow();
      onInterrupt.run();
      try {
        awaitAll(remaining.get());
      } catch (InterruptedException again) {
        // stop waiting: what is not settled now is delivered again
      }
    }
    pool.shutdown();
    return interrupted;
  }
}
