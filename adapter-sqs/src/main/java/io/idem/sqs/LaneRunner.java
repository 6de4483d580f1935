package io.idem.sqs;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.spi.AdapterWorker;
import io.idem.spi.SettlementRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one received batch in lanes — one per message on a standard queue, one per
 * {@code MessageGroupId} on a FIFO queue, in order — on the worker pool, and each message of a
 * lane through the pipeline.
 *
 * <p><b>FIFO.</b> A message retried while the rest of its group waits behind it in the lane is
 * retried in process: it stays hidden (the heartbeat keeps it, and the rest of the group), the
 * worker waits the retry backoff and runs it again as the next attempt. Handing the rest of the
 * group back instead would make SQS count a receive for each of them on every retry of the head,
 * and a {@code RedrivePolicy} would move them to its dead-letter queue without their handler ever
 * running (issue 11). A retried message with nothing behind it in the batch goes back to SQS with
 * its visibility set to the backoff (its group stays locked meanwhile). A message that could not
 * be settled, or whose visibility ran out, stops its lane: the rest is handed back.
 *
 * <p><b>Process deaths.</b> A message flagged as an {@linkplain
 * SqsInboundMessage#unaccountedRedelivery() unaccounted redelivery} (its handler may have killed
 * the process before) has the pending batched deletes sent before its handler runs; the pipeline
 * counts its attempt in the store first and dead-letters it past {@code maxAttempts} without
 * running it ({@link #runAccounted}).
 *
 * <p>Batch mode ({@link BatchRunner}) uses the same pieces: the readiness check before a message
 * starts, its acknowledgement, holding in process, and what is done when processing throws.
 *
 * <p>Thread-safe: lanes of one batch run concurrently; batches one after another.
 */
final class LaneRunner {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  /** How often a message held in process checks for close and its visibility. */
  private static final Duration HOLD_SLICE = Duration.ofMillis(50);

  private final SqsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final VisibilityKeeper keeper;
  private final AttemptLedger ledger;
  private final DeleteBatcher deletes;
  private final DeadLetters deadLetters;
  private final boolean fifo;
  private final @Nullable Integer maxReceiveCount;
  private final AtomicBoolean stopping;
  private final long marginNanos;
  private final AtomicLong skipped = new AtomicLong();
  private final AtomicInteger heldInProcess = new AtomicInteger();
  /** Redrive mode: ids of messages the pipeline gave up on, handed back without processing. */
  private final Set<String> givenUp = RecentIds.set();

  LaneRunner(SqsConsumerConfig config, IdempotentConsumer<?> pipeline, VisibilityKeeper keeper,
      AttemptLedger ledger, DeleteBatcher deletes, DeadLetters deadLetters, boolean fifo, @Nullable Integer maxReceiveCount,
      AtomicBoolean stopping) {
    this.config = config;
    this.pipeline = pipeline;
    this.keeper = keeper;
    this.ledger = ledger;
    this.deletes = deletes;
    this.deadLetters = deadLetters;
    this.fifo = fifo;
    this.maxReceiveCount = maxReceiveCount;
    this.stopping = stopping;
    this.marginNanos = SqsConsumerConfig.safetyMargin(config.visibilityTimeout()).toNanos();
  }

  long skippedCount() {
    return skipped.get();
  }

  /** Messages held in process right now for a retry backoff or a store outage. */
  int heldInProcess() {
    return heldInProcess.get();
  }

  /** Runs every lane of {@code deliveries} on {@code pool}, waits for them, flushes the deletes. */
  void runBatch(List<Delivery> deliveries, ExecutorService pool) {
    runAll(lanes(deliveries), this::runLane, pool);
  }

  /** Runs {@code task} on each of {@code units} on {@code pool}, waits for them, flushes the deletes. */
  void runAll(List<List<Delivery>> units, Consumer<List<Delivery>> task, ExecutorService pool) {
    List<CompletableFuture<?>> running = new ArrayList<>(units.size());
    try {
      for (List<Delivery> unit : units) {
        running.add(CompletableFuture.runAsync(() -> task.accept(unit), pool));
      }
    } finally {
      // even when a lane could not be submitted: no lane may still run when the poller hands
      // back what was not started
      try {
        CompletableFuture.allOf(running.toArray(new CompletableFuture<?>[0])).join();
      } catch (RuntimeException e) {
        LOG.error("a lane of {} failed unexpectedly: {}", config.queueName(), e.toString(), e);
      }
    }
    deletes.flush();
  }

  /** One lane per message (standard queue), or per {@code MessageGroupId} in receive order (FIFO). */
  List<List<Delivery>> lanes(List<Delivery> deliveries) {
    List<List<Delivery>> lanes = new ArrayList<>();
    if (!fifo) {
      deliveries.forEach(d -> lanes.add(List.of(d)));
      return lanes;
    }
    Map<String, List<Delivery>> groups = new LinkedHashMap<>();
    for (Delivery d : deliveries) {
      String group = d.message.messageGroupId();
      groups.computeIfAbsent(group == null ? "" : group, g -> new ArrayList<>()).add(d);
    }
    lanes.addAll(groups.values());
    return lanes;
  }

  private void runLane(List<Delivery> lane) {
    for (int i = 0; i < lane.size(); i++) {
      Delivery delivery = lane.get(i);
      if (stopping.get()) {
        keeper.handBack(lane.subList(i, lane.size()));
        return;
      }
      delivery.started = true;
      boolean hasTail = i + 1 < lane.size();
      List<Delivery> behind = lane.subList(i + 1, lane.size());
      SettlementRecord[] current = new SettlementRecord[1];
      // a failed acknowledgement, or an Error the pipeline does not catch (from a listener…): this
      // message's failure, never the lane's; a VirtualMachineError stops the consumer
      @Nullable Boolean goOn = AdapterWorker.survive(() -> delivery + " on " + config.queueName(),
          () -> ready(delivery) ? process(delivery, hasTail, current) : !fifo, () -> current[0],
          releasing(List.of(delivery)), backoff(delivery), () -> fail(List.of(delivery), behind), LOG);
      // FIFO: nothing behind a message of its group may overtake it; close() interrupted the
      // worker: the rest is handed back (a stray interrupt flag is cleared with a WARN)
      if (!(goOn == null ? !fifo : goOn)
          || AdapterWorker.stopsAfter(stopping.get(), null, () -> delivery + " on " + config.queueName(), LOG)) {
        keeper.handBack(behind);
        return;
      }
    }
  }

  /**
   * SQS's {@link AdapterWorker.HandBack} for what processing threw before the acknowledgement
   * settled: each of {@code deliveries} still unsettled is {@linkplain #release released} after
   * the retry backoff of the attempt it reached (a FIFO retry in process moves it on, so the
   * backoff is read when it is handed back, not before the run). It reports the failure itself
   * (whether the message is still held, and a refused dead-letter copy at ERROR once per message).
   * After a {@link VirtualMachineError} nothing is sent to SQS: {@link #fail} stopped extending
   * them, and they reappear when their visibility runs out.
   */
  AdapterWorker.HandBack releasing(List<Delivery> deliveries) {
    return new AdapterWorker.HandBack() {
      @Override
      public void handBack(Throwable failure, Duration after) {
        if (!(failure instanceof VirtualMachineError)) {
          deliveries.forEach(d -> release(d, failure));
        }
      }

      @Override
      public boolean reportsItself(Throwable failure) {
        return true;
      }
    };
  }

  /** The retry policy's backoff for {@code delivery}'s attempt now. */
  Duration backoff(Delivery delivery) {
    return pipeline.retryPolicy().backoff(delivery.message.deliveryAttempt());
  }

  /**
   * Before a message starts: enough visibility left? Extend it or skip it. With the heartbeat on,
   * a message whose visibility (as this consumer counts it: from before the receive was sent) is
   * within the safety margin of running out is extended first — SQS refuses the call if its
   * receipt handle is no longer current, i.e. another receive has it — and skipped only when that
   * fails. A skipped message reappears when its visibility runs out; that receive is not counted
   * as an attempt ({@link AttemptLedger}).
   */
  boolean ready(Delivery delivery) {
    long now = System.nanoTime();
    long remaining = delivery.remainingNanos(now);
    boolean extend = config.visibilityHeartbeat() && (remaining <= marginNanos || keeper.due(delivery, now));
    if (extend ? !keeper.extend(delivery) : remaining <= marginNanos) {
      skipped.incrementAndGet();
      keeper.leave(delivery);
      LOG.info("{} on {} waited too long for its turn (visibility {} ms from running out{}); skipped and"
          + " left for redelivery, which is not counted as an attempt", delivery, config.queueName(),
          remaining / 1_000_000, extend ? ", and it could not be extended" : "");
      return false;
    }
    return true;
  }

  /**
   * Runs the pipeline on one message, again in process after a store outage or (FIFO with
   * {@code hasTail}) a retry; false when the rest of its FIFO group must wait.
   */
  private boolean process(Delivery delivery, boolean hasTail, SettlementRecord[] current) {
    if (handedBackAsGivenUp(delivery)) {
      return false;
    }
    boolean retryInProcess = fifo && hasTail;
    ProcessingOutcome outcome;
    while (true) {
      SqsAcknowledgement acknowledgement = acknowledgement(delivery, retryInProcess);
      current[0] = acknowledgement.record();
      outcome = runAccounted(delivery, () -> runPipeline(delivery, acknowledgement));
      Duration wait = acknowledgement.heldForStore();
      if (wait == null && outcome == ProcessingOutcome.RETRY) {
        wait = acknowledgement.heldForRetry();
        if (wait != null) {
          LOG.debug("{} retried in process in {} ms: the rest of its group waits hidden behind it", delivery,
              wait.toMillis());
          delivery.nextAttempt(ledger);
        }
      }
      if (wait == null) {
        break;
      }
      if (!holdInProcess(delivery, wait)) {
        return false;
      }
    }
    switch (outcome) {
      case RETRY:
      case RELEASED: // handed back at shutdown: nothing more of this lane
        return false;
      case DEAD_LETTERED:
      case CONFLICT:
        return !gaveUp(delivery);
      default:
        return true;
    }
  }

  /**
   * Runs {@code run} — the pipeline on {@code deliveries} — recording in the {@link AttemptLedger}
   * that their handlers started, and, unless a {@link VirtualMachineError} ends the run (it stops
   * the consumer: whoever receives them next must count that run), that they ended. Before an
   * {@linkplain SqsInboundMessage#unaccountedRedelivery() unaccounted redelivery} runs — it may
   * kill the process again — the pending batched deletes are sent, so that the messages already
   * applied are not received again because their deletes died with the process.
   */
  <T> T runAccounted(List<Delivery> deliveries, Supplier<T> run) {
    if (deliveries.stream().anyMatch(d -> d.message.unaccountedRedelivery())) {
      deletes.flush();
    }
    deliveries.forEach(d -> ledger.started(d.messageId()));
    T result;
    try {
      result = run.get();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (RuntimeException | Error e) {
      deliveries.forEach(d -> ledger.ended(d.messageId()));
      throw e;
    }
    deliveries.forEach(d -> ledger.ended(d.messageId()));
    return result;
  }

  private <T> T runAccounted(Delivery delivery, Supplier<T> run) {
    return runAccounted(List.of(delivery), run);
  }

  /**
   * Redrive mode: a message the pipeline gave up on already (or past {@code maxAttempts}) is
   * handed back unprocessed for the queue's {@code RedrivePolicy} to move. An unaccounted
   * redelivery is not judged by its receive count, which the deaths of other messages' handlers
   * may have raised: the pipeline counts its attempts in the store and decides.
   *
   * @return true when it was handed back
   */
  boolean handedBackAsGivenUp(Delivery delivery) {
    if (deadLetters.viaRedrivePolicy()
        && (givenUp.contains(delivery.messageId())
            || (!delivery.message.unaccountedRedelivery()
                && delivery.message.deliveryAttempt() > pipeline.retryPolicy().maxAttempts()))) {
      LOG.debug("{} was given up already; handed back for the RedrivePolicy", delivery);
      keeper.handBack(List.of(delivery));
      return true;
    }
    return false;
  }

  /**
   * After a dead letter or conflict: in redrive mode remembers that the pipeline gave up on it (it
   * was handed back for the {@code RedrivePolicy}, and on a FIFO queue its group must stop).
   *
   * @return true in redrive mode
   */
  boolean gaveUp(Delivery delivery) {
    if (deadLetters.viaRedrivePolicy()) {
      givenUp.add(delivery.messageId());
      return true;
    }
    return false;
  }

  /**
   * The acknowledgement of {@code delivery}'s next run, with the message's broker attempt limit
   * set: the queue's {@code maxReceiveCount} as an attempt number, unless the message is retried
   * in process ({@code retryInProcess}: no receive is counted) or dead letters go via the
   * {@code RedrivePolicy}.
   */
  SqsAcknowledgement acknowledgement(Delivery delivery, boolean retryInProcess) {
    delivery.message.brokerAttemptLimit(
        retryInProcess || maxReceiveCount == null || deadLetters.viaRedrivePolicy()
            ? Integer.MAX_VALUE
            : delivery.message.deliveryAttempt() + Math.max(0, maxReceiveCount - delivery.receiveCount));
    return new SqsAcknowledgement(delivery, keeper, deletes, deadLetters,
        retryInProcess ? null : maxReceiveCount, pipeline.consumerGroup(), retryInProcess);
  }

  /**
   * The pipeline on {@code delivery}. Something other than a {@link VirtualMachineError} thrown
   * after the acknowledgement settled it (by a listener's {@code onOutcome}, say) is only logged:
   * the message stays as SQS was told — its delete may still be queued — and never gets its
   * visibility changed.
   *
   * @return the outcome, or what the acknowledgement settled when the pipeline threw afterwards
   */
  private ProcessingOutcome runPipeline(Delivery delivery, SqsAcknowledgement acknowledgement) {
    try {
      return pipeline.process(delivery.message, acknowledgement);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      ProcessingOutcome settled = acknowledgement.settled();
      if (settled == null) {
        throw e;
      }
      LOG.error("{} on {} was settled ({}), then processing threw; it stays settled", delivery,
          config.queueName(), settled, e);
      return settled;
    }
  }

  /**
   * Something other than a {@link VirtualMachineError} was thrown while {@code delivery} was
   * processed, before its acknowledgement settled it: unless it was left to reappear (a failed
   * delete or visibility change, a skipped message), stop its heartbeat and have SQS deliver it
   * again after the retry backoff. A dead-letter copy SQS refused is reported at ERROR once per
   * message ({@link DeadLetters.CopyRefused#firstForMessage()}), at WARN after that.
   */
  void release(Delivery delivery, Throwable failure) {
    boolean loud = !(failure instanceof DeadLetters.CopyRefused refused) || refused.firstForMessage();
    if (!delivery.held()) {
      log(loud, "could not settle {} on {}; it reappears when its visibility runs out", delivery, failure);
      return;
    }
    Duration delay = backoff(delivery);
    log(loud, "could not settle {} on {}; released, it comes back in " + delay.toMillis() + " ms", delivery,
        failure);
    try {
      keeper.changeVisibility(delivery, delay);
    } catch (RuntimeException e) {
      LOG.warn("{}; it reappears when its visibility runs out", e.getMessage());
    }
  }

  private void log(boolean loud, String format, Delivery delivery, Throwable failure) {
    if (loud) {
      LOG.error(format, delivery, config.queueName(), failure);
    } else {
      LOG.warn(format + " (again: {})", delivery, config.queueName(), failure.getMessage());
    }
  }

  /**
   * A {@link VirtualMachineError} (out of memory…) on a lane ({@link AdapterWorker#survive}'s
   * {@code onFatal}, which logs the error): stop extending the messages in hand and the rest of
   * their lane, without calling SQS, so that they reappear when their visibility runs out; and stop
   * the consumer. The ones in hand stay started in the {@link AttemptLedger} (their next receive is
   * an unaccounted redelivery: the run counts); the rest never ran, and their next receive is not
   * counted as an attempt.
   */
  void fail(List<Delivery> inHand, List<Delivery> notStarted) {
    inHand.forEach(keeper::forget);
    notStarted.forEach(keeper::leave);
    stopping.set(true); // no more receives; the other lanes hand back what they have not started
    LOG.error("SQS consumer on {} stops: a fatal error while processing {}; it and the {} message(s) behind it"
        + " reappear when their visibility runs out", config.queueName(),
        inHand.size() == 1 ? inHand.get(0) : inHand.size() + " messages", notStarted.size());
  }

  /**
   * Keeps {@code delivery} hidden for {@code wait} (a store outage, or a FIFO retry ahead of the
   * rest of its group) on this worker thread, then checks it is still {@link #ready}.
   *
   * @return true to run it again; false when it was handed back (closing) or could not be kept
   */
  private boolean holdInProcess(Delivery delivery, Duration wait) {
    return !holdInProcess(List.of(delivery), wait).isEmpty() && ready(delivery);
  }

  /**
   * Keeps {@code deliveries} hidden for {@code wait} on this worker thread; the next receive waits
   * for the batch. The heartbeat extends them; with the heartbeat off this extends them itself.
   * Closing hands them all back (visibility 0, not counted as attempts).
   *
   * @return the ones still kept, in order: not those handed back (closing, interrupted) or that
   *     could not be kept (their visibility could not be extended: they reappear on their own)
   */
  List<Delivery> holdInProcess(List<Delivery> deliveries, Duration wait) {
    List<Delivery> kept = new ArrayList<>(deliveries);
    heldInProcess.addAndGet(kept.size());
    try {
      long until = System.nanoTime() + wait.toNanos();
      while (true) {
        if (stopping.get()) {
          keeper.handBack(kept);
          return List.of();
        }
        long now = System.nanoTime();
        kept.removeIf(delivery -> {
          if (!delivery.held()) {
            return true;
          }
          if (!config.visibilityHeartbeat() && keeper.due(delivery, now) && !keeper.extend(delivery)) {
            skipped.incrementAndGet();
            keeper.leave(delivery);
            return true;
          }
          return false;
        });
        long left = until - now;
        if (kept.isEmpty() || left <= 0) {
          return kept;
        }
        try {
          TimeUnit.NANOSECONDS.sleep(Math.min(left, HOLD_SLICE.toNanos()));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          keeper.handBack(kept);
          return List.of();
        }
      }
    } finally {
      heldInProcess.addAndGet(-deliveries.size());
    }
  }
}
