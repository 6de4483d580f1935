package io.idem.kafka;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageRun;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.AdapterWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the records of one partition through the pipeline, in partition order, one record at a time
 * ({@link IdempotentConsumer#process}) or one run of up to {@link KafkaConsumerConfig#maxBatchSize()}
 * records per transaction ({@link IdempotentConsumer#processBatch(List, List, BatchOrder)} with
 * {@link BatchOrder#ORDERED}; each run sized by a {@link BatchBudget} to the time left in the
 * poll's budget), and turns each acknowledgement's decision into partition progress:
 * settled records move the offset to commit; the first record not settled is sought back to (and
 * its partition paused for the backoff), so it and every record behind it come again in order.
 * While the partition's redelivery window is open ({@link PartitionProgress#openWindow}) records
 * run one at a time, each flagged as an unaccounted redelivery or not ({@link
 * PartitionProgress#flag}) by how the records before it ended.
 * Never touches the {@code KafkaConsumer} itself (it is not thread-safe): seeks, pauses and
 * commits go through {@link Actions}. Thread-safe as far as {@link PartitionProgress} is; one run
 * per partition at a time.
 */
final class PartitionRunner {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);

  /** How a run of records ended. */
  enum Ending {
    /** Every record was settled: the partition goes on with its next record. */
    SETTLED,
    /** A record was handed back (sought back to, maybe paused): the rest of the partition waits. */
    STOPPED,
    /** close() interrupted a handler: the record was handed back and the loop ends. */
    RELEASED,
    /**
     * The time budget of the poll ran out: the partition was sought back to its first record not
     * started, to be fetched again after the next poll (nothing counted).
     */
    OUT_OF_TIME,
    /**
     * The consumer is closing or the partition was revoked: the records not started are neither
     * settled nor sought back (the next owner gets them from the committed offset).
     */
    ABANDONED
  }

  /**
   * What a run does to the {@code KafkaConsumer} and the commits, done at once on the polling
   * thread or deferred to it when the run is on a worker ({@link PartitionWorkers}).
   */
  interface Actions {
    /** The next fetch of {@code partition} starts at {@code record}. */
    void seek(TopicPartition partition, ConsumerRecord<byte[], byte[]> record);

    /** {@code partition} stays paused for {@code delay} (a retry backoff), then resumes. */
    void pauseFor(TopicPartition partition, Duration delay);

    /** Commit what is settled before a retry is sought back to (fewer redeliveries after a crash). */
    void commitSettled();

    /**
     * A record, or a batch of records, was settled and the run goes on: commit what is settled if
     * the commit interval has passed, so that an offset waits at most the interval plus one
     * record's (one batch's) time for its commit, not the rest of the poll's records.
     */
    void settledSome();
  }

  private final DeadLetterPublisher deadLetters;
  private final IdempotentConsumer<?> pipeline;
  private final PartitionProgress progress;
  private final int maxBatchSize;
  /** Sizes batch mode's runs to the time left (one per consumer: shared by its workers). */
  private final BatchBudget budget;
  private final BooleanSupplier closing;
  private final String groupId;

  /**
   * @param longestBatch the most time a batch is sized for ({@link BatchBudget}): the shutdown timeout
   * @param closing whether close() was called
   */
  PartitionRunner(
      DeadLetterPublisher deadLetters,
      IdempotentConsumer<?> pipeline,
      PartitionProgress progress,
      int maxBatchSize,
      Duration longestBatch,
      BooleanSupplier closing,
      String groupId) {
    this.deadLetters = deadLetters;
    this.pipeline = pipeline;
    this.progress = progress;
    this.maxBatchSize = maxBatchSize;
    this.budget = new BatchBudget(maxBatchSize, longestBatch.toNanos());
    this.closing = closing;
    this.groupId = groupId;
  }

  /**
   * Runs {@code records} (one partition's records of a poll, in offset order) through the
   * pipeline: one at a time, or in runs of up to {@code maxBatchSize}, each sized by the {@link
   * BatchBudget} to fit the time left before {@code deadlineNanos}; stops at the first record not
   * settled.
   *
   * @param stop checked before each record or run: true when the consumer closes or the
   *     partition is revoked ({@link Ending#ABANDONED})
   * @param deadlineNanos {@link System#nanoTime()} after which the rest is sought back to ({@link
   *     Ending#OUT_OF_TIME}); checked before each record or run, which is sized to end well before
   *     it
   */
  Ending run(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> records, Actions actions,
      BooleanSupplier stop, long deadlineNanos) {
    // per-message mode: each record's claim may travel with the previous record's COMMIT
    // (MessageRun); the run is closed, rolling back a claim sent for a record not reached, however
    // this loop ends
    try (MessageRun sequence = pipeline.openRun()) {
      Announced announced = new Announced();
      for (int from = 0; from < records.size(); ) {
        if (stop.getAsBoolean()) {
          return Ending.ABANDONED; // finish only the in-flight work; the rest stays uncommitted
        }
        if (System.nanoTime() - deadlineNanos > 0) {
          actions.seek(partition, records.get(from)); // bounded work per poll: fetched again after polling
          return Ending.OUT_OF_TIME;
        }
        // in the redelivery window after an assignment (PartitionProgress.flag) records run one at a
        // time, each flagged or not by what the records before it turned out to be
        boolean window = progress.inWindow(partition);
        // batch mode: a batch sized to the time left before the deadline (BatchBudget), so that it
        // does not outlast max.poll.interval.ms; the first run of the consumer is a single record
        int size = window || maxBatchSize == 1 ? 1 : budget.size(deadlineNanos - System.nanoTime());
        int to = Math.min(records.size(), from + size);
        // the next record is announced only when it will be the next one() call of this run, and
        // not in the window: whether it is flagged depends on how this record ends
        ConsumerRecord<byte[], byte[]> next =
            maxBatchSize == 1 && !window && to < records.size() ? records.get(to) : null;
        long startedNanos = System.nanoTime();
        Ending ending = to - from == 1
            ? one(partition, records.get(from), actions, sequence, next, announced)
            : batch(partition, records.subList(from, to), actions);
        if (ending != Ending.SETTLED) {
          return ending; // retried or unsettled: the partition was sought back; later records come again
        }
        if (maxBatchSize > 1) {
          budget.completed(to - from, System.nanoTime() - startedNanos);
        }
        from = to;
        if (from < records.size()) {
          actions.settledSome(); // the run's last settlement is the caller's to commit
        }
      }
      return Ending.SETTLED;
    }
  }

  /** The record announced to the run as the next one, and the message built for it then. */
  private static final class Announced {
    @Nullable ConsumerRecord<byte[], byte[]> record;
    @Nullable KafkaInboundMessage message;
  }

  /** Processes one record in its own transaction; {@code next} is the run's next record, if any. */
  private Ending one(TopicPartition partition, ConsumerRecord<byte[], byte[]> record, Actions actions,
      MessageRun sequence, @Nullable ConsumerRecord<byte[], byte[]> next, Announced announced) {
    int attempt = progress.attemptFor(partition, record.offset());
    KafkaInboundMessage message = announced.record == record && announced.message != null
        ? announced.message
        : KafkaInboundMessage.of(record, attempt, progress.flag(partition, record.offset()), Instant.now());
    announced.record = null;
    announced.message = null;
    KafkaAcknowledgement acknowledgement = new KafkaAcknowledgement(record, deadLetters);
    Supplier<@Nullable InboundMessage> following = () -> {
      if (next == null) {
        return null;
      }
      KafkaInboundMessage built =
          KafkaInboundMessage.of(next, progress.attemptFor(partition, next.offset()), Instant.now());
      announced.record = next;
      announced.message = built;
      return built;
    };
    boolean[] handedBack = new boolean[1];
    ProcessingOutcome outcome = AdapterWorker.survive(() -> "record " + idOf(record),
        () -> sequence.process(message, acknowledgement, following),
        acknowledgement::settlement,
        (failure, after) -> {
          handedBack[0] = true;
          if (!(failure instanceof VirtualMachineError)) { // else: uncommitted, and the loop ends
            deliverAgain(partition, record, attempt, after, actions);
          }
        },
        pipeline.retryPolicy().backoff(attempt), () -> { }, LOG); // run() logs a fatal loop end
    if (outcome == ProcessingOutcome.PROCESSED) {
      progress.appliedFresh(partition, record.offset()); // it was not applied before: the window can close
    }
    return handedBack[0] ? Ending.STOPPED : settle(partition, record, attempt, acknowledgement, null, actions);
  }

  /**
   * Processes {@code records} (consecutive records of {@code partition}, at least two) in one
   * transaction. Records the pipeline did not start ({@link BatchResult#notStarted}) are handed
   * back like a retry but without counting an attempt: the partition is sought back to the first
   * of them.
   */
  private Ending batch(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> records, Actions actions) {
    List<InboundMessage> messages = new ArrayList<>(records.size());
    List<Acknowledgement> acks = new ArrayList<>(records.size());
    int[] attempts = new int[records.size()];
    Instant receivedAt = Instant.now();
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> record = records.get(i);
      attempts[i] = progress.attemptFor(partition, record.offset());
      messages.add(KafkaInboundMessage.of(record, attempts[i], receivedAt));
      acks.add(new KafkaAcknowledgement(record, deadLetters));
    }
    Throwable thrown = null;
    int started = records.size();
    try {
      BatchResult result = pipeline.processBatch(messages, acks, BatchOrder.ORDERED);
      started = result.stoppedAt();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      // an acknowledgement threw (the first record it left undecided is the one), or a listener or
      // the key extractor threw what the pipeline does not catch
      thrown = e;
    }
    for (int i = 0; i < records.size(); i++) {
      ConsumerRecord<byte[], byte[]> record = records.get(i);
      KafkaAcknowledgement ack = (KafkaAcknowledgement) acks.get(i);
      if (ack.decision() == KafkaAcknowledgement.Decision.NONE && thrown == null && i >= started) {
        // not started: handed back as if never fetched, the attempt it had kept
        progress.failed(partition, record.offset(), attempts[i] - 1);
        actions.seek(partition, record);
        return Ending.STOPPED;
      }
      boolean undecided = ack.decision() == KafkaAcknowledgement.Decision.NONE;
      Ending ending = settle(partition, record, attempts[i], ack, undecided ? thrown : null, actions);
      if (ending != Ending.SETTLED) {
        return ending;
      }
    }
    if (thrown != null) {
      // every record was settled, then something threw (e.g. a listener's onOutcome): the
      // decisions stand — processing the records again would repeat their dead-letter copies
      LOG.error("the records of {} from offset {} were settled, then processing threw; the decisions stand",
          partition, records.get(0).offset(), thrown);
    }
    return Ending.SETTLED;
  }

  /**
   * Turns the decision of {@code acknowledgement} into progress; {@code thrown} is what processing
   * threw, if anything.
   */
  private Ending settle(
      TopicPartition partition,
      ConsumerRecord<byte[], byte[]> record,
      int attempt,
      KafkaAcknowledgement acknowledgement,
      @Nullable Throwable thrown,
      Actions actions) {
    if (thrown != null) {
      String id = idOf(record);
      // the acknowledgement failed (e.g. the dead-letter send), or a listener or the key extractor
      // threw something the pipeline does not catch: a failure of this record, never of the loop
      if (acknowledgement.decision() == KafkaAcknowledgement.Decision.NONE) {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("record {} could not be settled; it stays uncommitted and comes back in {} ms",
            id, delay.toMillis(), thrown);
        deliverAgain(partition, record, attempt, delay, actions);
        return Ending.STOPPED;
      }
      // thrown after the acknowledgement decided (e.g. by a listener's onOutcome): the decision
      // stands — processing the record again would repeat its dead-letter copy
      LOG.error("record {} was settled ({}), then processing threw; the decision stands",
          id, acknowledgement.decision(), thrown);
    }
    switch (acknowledgement.decision()) {
      case ACK, DEAD_LETTERED -> {
        progress.settled(partition, record.offset(), record.leaderEpoch());
        return Ending.SETTLED;
      }
      case RELEASED -> {
        // close() interrupted the handler: not the record's failure and not an attempt. Nothing is
        // committed for it (no commit either while the interrupt flag is set: the client would
        // throw); the loop ends and shutdown() commits what was settled before it.
        progress.failed(partition, record.offset(), attempt - 1);
        actions.seek(partition, record);
        if (closing.getAsBoolean()) {
          return Ending.RELEASED;
        }
        if (Thread.interrupted()) {
          String id = idOf(record);
          // not close(): a handler that restored an interrupt it caught. The flag would fail the
          // next poll and end the loop; the record comes back, not counted
          LOG.warn("record {} was handed back because processing left the consumer thread of group {}"
              + " interrupted; the flag is cleared: the consumer is stopped by close()", id, groupId);
        }
        return Ending.STOPPED;
      }
      case RETRY -> {
        // a store outage is not the record's failure: it comes back with the same attempt
        int used = acknowledgement.countsAsAttempt() ? attempt : attempt - 1;
        deliverAgain(partition, record, used, acknowledgement.delay(), actions);
        return Ending.STOPPED;
      }
      default -> {
        Duration delay = pipeline.retryPolicy().backoff(attempt);
        LOG.error("the pipeline settled record {} neither way; it stays uncommitted and comes back in {} ms",
            idOf(record), delay.toMillis());
        deliverAgain(partition, record, attempt, delay, actions);
        return Ending.STOPPED;
      }
    }
  }

  /** {@code <topic>-<partition>@<offset>}, for the log lines of the paths that are not an ack (built only there). */
  private static String idOf(ConsumerRecord<byte[], byte[]> record) {
    return KafkaInboundMessage.brokerId(record.topic(), record.partition(), record.offset());
  }

  /** Commits what is settled, seeks back to {@code record} and pauses its partition for {@code delay}. */
  private void deliverAgain(TopicPartition partition, ConsumerRecord<byte[], byte[]> record, int attempt,
      Duration delay, Actions actions) {
    actions.commitSettled();
    actions.seek(partition, record);
    progress.failed(partition, record.offset(), attempt);
    if (!delay.isZero()) {
      actions.pauseFor(partition, delay);
    }
  }
}
