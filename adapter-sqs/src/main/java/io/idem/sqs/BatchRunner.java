package io.idem.sqs;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.AdapterWorker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batch mode ({@link SqsConsumerConfig#maxBatchSize()} above 1): runs what one receive returned
 * through {@link IdempotentConsumer#processBatch(List, List, BatchOrder)} — one store transaction,
 * one multi-row claim and one COMMIT per batch — then sends the batch's deletes together
 * ({@code DeleteMessageBatch}, each with the receipt handle of this delivery).
 *
 * <ul>
 *   <li><b>Standard queue</b>: the receive is cut into batches of at most {@code maxBatchSize},
 *       each one {@code processBatch(..., UNORDERED)} on a worker;
 *   <li><b>FIFO queue</b>: one unit per {@code MessageGroupId} of the receive, its messages in
 *       order, each batch of it one {@code processBatch(..., ORDERED)}; groups run on the workers
 *       side by side. What the pipeline did not start behind a message it handed back ({@link
 *       BatchResult#notStarted}) stays hidden behind it, exactly as in per-message mode: a message
 *       retried with the rest of its group behind it is retried in process (the group kept hidden
 *       by the heartbeat, no receive counted), otherwise the rest is handed back (visibility 0,
 *       recorded in the {@link AttemptLedger} as not run).
 * </ul>
 *
 * <p>A message that already failed an attempt (its attempt is above 1: redelivered by SQS, or
 * retried in process) runs in a transaction of its own, first, so that a message that keeps
 * failing does not roll back a whole batch on every attempt; on a FIFO queue only at the head of
 * its group (order is kept). So does an {@linkplain SqsInboundMessage#unaccountedRedelivery()
 * unaccounted redelivery} (a message whose handler may have killed the process): it dies alone,
 * after the deletes of the batches before it were sent ({@link LaneRunner#runAccounted}). A batch
 * of one runs through {@link IdempotentConsumer#process}.
 *
 * <p>Store outages and transaction retries hold the batch's messages hidden in process for the
 * pipeline's delay and run them again (no attempt counted, nothing handed back). Before each run
 * every message's remaining visibility is checked as in per-message mode ({@link
 * LaneRunner#ready}); the heartbeat keeps every held message of every batch hidden meanwhile.
 *
 * <p>Thread-safe: units of one receive run concurrently, each confined to one worker.
 */
final class BatchRunner {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  private final IdempotentConsumer<?> pipeline;
  private final LaneRunner lanes;
  private final VisibilityKeeper keeper;
  private final AttemptLedger ledger;
  private final DeleteBatcher deletes;
  private final boolean fifo;
  private final AtomicBoolean stopping;
  private final int maxBatchSize;

  BatchRunner(SqsConsumerConfig config, IdempotentConsumer<?> pipeline, LaneRunner lanes, VisibilityKeeper keeper,
      AttemptLedger ledger, DeleteBatcher deletes, boolean fifo, AtomicBoolean stopping) {
    this.pipeline = pipeline;
    this.lanes = lanes;
    this.keeper = keeper;
    this.ledger = ledger;
    this.deletes = deletes;
    this.fifo = fifo;
    this.stopping = stopping;
    this.maxBatchSize = Math.min(config.maxBatchSize(), config.maxMessages());
  }

  /** Runs every unit of {@code deliveries} on {@code pool}, waits for them, flushes the deletes. */
  void runBatch(List<Delivery> deliveries, ExecutorService pool) {
    lanes.runAll(units(deliveries), this::runUnit, pool);
  }

  /** FIFO: one unit per message group; standard: chunks of {@code maxBatchSize}. */
  private List<List<Delivery>> units(List<Delivery> deliveries) {
    if (fifo) {
      return lanes.lanes(deliveries);
    }
    List<List<Delivery>> units = new ArrayList<>();
    for (int from = 0; from < deliveries.size(); from += maxBatchSize) {
      units.add(List.copyOf(deliveries.subList(from, Math.min(deliveries.size(), from + maxBatchSize))));
    }
    return units;
  }

  private void runUnit(List<Delivery> unit) {
    List<Delivery> pending = new ArrayList<>(unit);
    if (!fifo) {
      // those that failed before first, each on its own (stable: the others keep their order)
      pending.sort(Comparator.comparing((Delivery d) -> !suspect(d)));
    }
    while (!pending.isEmpty()) {
      if (stopping.get()) {
        keeper.handBack(pending);
        return;
      }
      int n = batchLength(pending);
      pending = round(new ArrayList<>(pending.subList(0, n)), new ArrayList<>(pending.subList(n, pending.size())));
    }
  }

  /** A suspect alone; otherwise the messages up to the next suspect, at most the maximum. */
  private int batchLength(List<Delivery> pending) {
    if (suspect(pending.get(0))) {
      return 1;
    }
    int n = 1;
    while (n < pending.size() && n < maxBatchSize && !suspect(pending.get(n))) {
      n++;
    }
    return n;
  }

  /**
   * A message that failed before (attempt above 1), or that may have killed the process before
   * ({@linkplain SqsInboundMessage#unaccountedRedelivery() unaccounted redelivery}): it runs in a
   * transaction of its own, so that it neither rolls back a batch on each attempt nor takes a
   * batch down with it when it halts the JVM.
   */
  private static boolean suspect(Delivery delivery) {
    return delivery.message.deliveryAttempt() > 1 || delivery.message.unaccountedRedelivery();
  }

  /**
   * Runs one batch, with {@code tail} (the rest of the unit) behind it.
   *
   * @return what runs next: the tail, after any message held in process for a retry or an outage
   */
  private List<Delivery> round(List<Delivery> batch, List<Delivery> tail) {
    List<Delivery> ready = new ArrayList<>(batch.size());
    for (int i = 0; i < batch.size(); i++) {
      Delivery delivery = batch.get(i);
      delivery.started = true;
      if (lanes.handedBackAsGivenUp(delivery) || !lanes.ready(delivery)) {
        if (fifo) {
          // nothing behind a message of its group may overtake it
          keeper.handBack(concat(batch.subList(i + 1, batch.size()), tail));
          tail = List.of();
          break;
        }
        continue;
      }
      ready.add(delivery);
    }
    if (ready.isEmpty()) {
      return tail;
    }
    List<SqsAcknowledgement> acks = new ArrayList<>(ready.size());
    for (int i = 0; i < ready.size(); i++) {
      acks.add(lanes.acknowledgement(ready.get(i), fifo && (i + 1 < ready.size() || !tail.isEmpty())));
    }
    List<Delivery> behind = tail;
    // the settlement is per message: the hand-back reads each acknowledgement's record itself
    BatchResult result;
    try {
      result = AdapterWorker.survive(() -> ready.size() + " message(s) from " + ready.get(0),
          () -> lanes.runAccounted(ready, () -> run(ready, acks)), () -> null, failing(ready, acks, behind),
          lanes.backoff(ready.get(0)), () -> lanes.fail(unsettled(ready, acks), behind), LOG);
    } finally {
      deletes.flush(); // the batch's deletes in one DeleteMessageBatch, after its COMMIT
    }
    if (result == null) {
      return List.of();
    }
    return next(ready, acks, result, tail);
  }

  private BatchResult run(List<Delivery> ready, List<SqsAcknowledgement> acks) {
    if (ready.size() == 1) {
      return new BatchResult(List.of(pipeline.process(ready.get(0).message, acks.get(0))), 1);
    }
    List<InboundMessage> messages = new ArrayList<>(ready.size());
    ready.forEach(d -> messages.add(d.message));
    return pipeline.processBatch(messages, List.<Acknowledgement>copyOf(acks),
        fifo ? BatchOrder.ORDERED : BatchOrder.UNORDERED);
  }

  /**
   * After the pipeline answered: messages held for a store outage, a transaction retry or (FIFO,
   * with the group behind them) a retry in process wait here for their delay and run again, the
   * rest of the group behind them; a FIFO message handed back to SQS (a retry, a release at close,
   * a dead letter left to the {@code RedrivePolicy}) has the rest of its group handed back.
   */
  private List<Delivery> next(
      List<Delivery> ready, List<SqsAcknowledgement> acks, BatchResult result, List<Delivery> tail) {
    List<Delivery> waiting = new ArrayList<>();
    Duration wait = Duration.ZERO;
    boolean stop = false;
    for (int i = 0; i < result.stoppedAt(); i++) {
      Delivery delivery = ready.get(i);
      SqsAcknowledgement ack = acks.get(i);
      ProcessingOutcome outcome = result.outcomes().get(i);
      Duration held = ack.heldForStore();
      if (held == null && outcome == ProcessingOutcome.RETRY) {
        held = ack.heldForRetry();
        if (held != null) {
          delivery.nextAttempt(ledger);
        }
      }
      if (held != null) {
        waiting.add(delivery);
        wait = held.compareTo(wait) > 0 ? held : wait;
      } else if (outcome == ProcessingOutcome.RETRY || outcome == ProcessingOutcome.RELEASED
          || ((outcome == ProcessingOutcome.DEAD_LETTERED || outcome == ProcessingOutcome.CONFLICT)
              && lanes.gaveUp(delivery))) {
        stop = true;
      }
    }
    List<Delivery> rest = concat(result.notStarted(ready), tail);
    if (fifo && stop) {
      keeper.handBack(rest);
      return List.of();
    }
    if (waiting.isEmpty()) {
      return rest;
    }
    List<Delivery> kept = lanes.holdInProcess(waiting, wait);
    if (fifo && kept.isEmpty()) {
      keeper.handBack(rest);
      return List.of();
    }
    return concat(kept, rest);
  }

  /**
   * The batch's {@link AdapterWorker.HandBack}, for when processing threw (an acknowledgement
   * failed, an {@code Error} from a listener): the first unsettled message is released after the
   * retry backoff as in per-message mode ({@link LaneRunner#releasing}); on a standard queue every
   * unsettled one is (the pipeline went on past a failed acknowledgement), on a FIFO queue the rest
   * of the group is handed back, not counted. {@link AdapterWorker#survive} is given no record: a
   * batch is settled message by message, so this reads each acknowledgement's record itself.
   */
  private AdapterWorker.HandBack failing(List<Delivery> ready, List<SqsAcknowledgement> acks, List<Delivery> tail) {
    return new AdapterWorker.HandBack() {
      @Override
      public void handBack(Throwable failure, Duration after) {
        if (failure instanceof VirtualMachineError) {
          return; // LaneRunner.fail stopped extending them: they reappear when their visibility runs out
        }
        List<Delivery> open = unsettled(ready, acks);
        if (!fifo) {
          lanes.releasing(open).handBack(failure, after);
          return;
        }
        if (!open.isEmpty()) {
          lanes.releasing(open.subList(0, 1)).handBack(failure, after);
          open = open.subList(1, open.size());
        }
        keeper.handBack(concat(open, tail));
      }

      @Override
      public boolean reportsItself(Throwable failure) {
        return true;
      }
    };
  }

  private static List<Delivery> unsettled(List<Delivery> ready, List<SqsAcknowledgement> acks) {
    List<Delivery> open = new ArrayList<>();
    for (int i = 0; i < ready.size(); i++) {
      if (!acks.get(i).record().isSettled()) {
        open.add(ready.get(i));
      }
    }
    return open;
  }

  private static List<Delivery> concat(List<Delivery> a, List<Delivery> b) {
    List<Delivery> all = new ArrayList<>(a.size() + b.size());
    all.addAll(a);
    all.addAll(b);
    return all;
  }
}
