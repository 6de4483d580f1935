package io.idem.sqs;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;

/**
 * The poller thread's loop: long-polls {@code ReceiveMessage}, holds what it got (the heartbeat
 * extends it from then on), gives each message the attempt its handler runs stand for and flags
 * the receives that may follow a handler run nobody counted ({@link AttemptLedger}), and has the
 * {@link Dispatch} run the batch; the next receive follows when the
 * batch is done and its deletes were flushed. Records, for {@code health()}, when the last receive
 * succeeded and whether the last one failed. Runs on one thread; its health fields are read from
 * any.
 */
final class Receiver implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);

  private final SqsConsumerConfig config;
  private final SqsClient sqs;
  private final boolean fifo;
  private final VisibilityKeeper keeper;
  private final AttemptLedger ledger;
  private final Dispatch lanes;
  private final DeleteBatcher deletes;
  private final ExecutorService workers;
  private final AtomicBoolean stopping;
  private volatile @Nullable Instant lastReceive;
  private volatile boolean lastReceiveFailed;

  Receiver(SqsConsumerConfig config, SqsClient sqs, boolean fifo, VisibilityKeeper keeper, AttemptLedger ledger,
      Dispatch lanes, DeleteBatcher deletes, ExecutorService workers, AtomicBoolean stopping) {
    this.config = config;
    this.sqs = sqs;
    this.fifo = fifo;
    this.keeper = keeper;
    this.ledger = ledger;
    this.lanes = lanes;
    this.deletes = deletes;
    this.workers = workers;
    this.stopping = stopping;
  }

  /** When the last {@code ReceiveMessage} returned without an error, or {@code null}. */
  @Nullable Instant lastReceive() {
    return lastReceive;
  }

  /** True while the last {@code ReceiveMessage} failed. */
  boolean lastReceiveFailed() {
    return lastReceiveFailed;
  }

  /**
   * Runs one receive's deliveries on the workers and returns when all are settled or handed back:
   * {@link LaneRunner} in per-message mode, {@link BatchRunner} in batch mode.
   */
  @FunctionalInterface
  interface Dispatch {
    void run(List<Delivery> deliveries, ExecutorService workers);
  }

  @Override
  public void run() {
    while (!stopping.get()) {
      List<Delivery> batch = new ArrayList<>();
      try {
        pollOnce(batch);
      } catch (VirtualMachineError e) {
        pollerFailed(batch, e);
        throw e;
      } catch (Throwable e) {
        // a bug, a client or SDK failure that is no SdkException: never the end of the poller,
        // which would leave what it took hidden by the heartbeat for hours
        List<Delivery> notStarted = notStarted(batch);
        LOG.error("polling {} failed: {}; {} received message(s) that had not started handed back;"
            + " polling again in {} ms", config.queueName(), e.toString(), notStarted.size(),
            config.pollErrorBackoff().toMillis(), e);
        keeper.handBack(notStarted);
        if (!stopping.get()) {
          pause(config.pollErrorBackoff());
        }
      }
    }
    deletes.flush();
  }

  /** One receive and its batch; each message taken is added to {@code batch} as soon as it is held. */
  private void pollOnce(List<Delivery> batch) {
    long sent = System.nanoTime();
    List<Message> messages;
    try {
      messages = receive();
      lastReceive = Instant.now();
      lastReceiveFailed = false;
    } catch (SdkException e) {
      lastReceiveFailed = true;
      if (!stopping.get()) {
        LOG.warn("ReceiveMessage on {} failed: {}; trying again in {} ms", config.queueName(), e.toString(),
            config.pollErrorBackoff().toMillis());
        pause(config.pollErrorBackoff());
      }
      return;
    }
    if (messages.isEmpty()) {
      return;
    }
    Instant receivedAt = Instant.now();
    long visibleUntil = sent + config.visibilityTimeout().toNanos();
    for (Message message : messages) {
      SqsInboundMessage read = SqsInboundMessage.of(config.queueName(), message, receivedAt);
      int receiveCount = read.deliveryAttempt();
      AttemptLedger.Attempt attempt = ledger.receive(read.brokerMessageId(), receiveCount);
      SqsInboundMessage counted = attempt.number() == receiveCount ? read : read.withDeliveryAttempt(attempt.number());
      Delivery delivery = new Delivery(
          counted.withUnaccountedRedelivery(attempt.unaccounted()), receiveCount, visibleUntil);
      keeper.hold(delivery);
      batch.add(delivery);
    }
    if (stopping.get()) {
      keeper.handBack(batch);
      return;
    }
    lanes.run(batch, workers);
  }

  /** The messages of {@code batch} still held that no lane took. */
  private static List<Delivery> notStarted(List<Delivery> batch) {
    return batch.stream().filter(d -> !d.started && d.held()).toList();
  }

  /**
   * A {@link VirtualMachineError} on the poller thread: stop extending what it received and no
   * lane took, without calling SQS, so that SQS delivers it again when its visibility runs out;
   * and stop the consumer.
   */
  private void pollerFailed(List<Delivery> batch, VirtualMachineError error) {
    List<Delivery> notStarted = notStarted(batch);
    notStarted.forEach(keeper::leave);
    stopping.set(true);
    LOG.error("SQS consumer on {} stops: {} on its poller thread; {} received message(s) that had not"
        + " started reappear when their visibility runs out", config.queueName(), error, notStarted.size());
  }

  private List<Message> receive() {
    ReceiveMessageRequest.Builder request = ReceiveMessageRequest.builder()
        .queueUrl(config.queueUrl())
        .maxNumberOfMessages(config.maxMessages())
        .waitTimeSeconds((int) config.waitTime().getSeconds())
        .visibilityTimeout((int) config.visibilityTimeout().getSeconds())
        .messageAttributeNames("All")
        .messageSystemAttributeNames(MessageSystemAttributeName.ALL);
    if (fifo) {
      // a receive the SDK retries after a lost response gets the same messages back instead of
      // leaving their groups locked until the visibility timeout
      request.receiveRequestAttemptId(UUID.randomUUID().toString());
    }
    return sqs.receiveMessage(request.build()).messages();
  }

  static void pause(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
