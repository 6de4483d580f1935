package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import io.idem.spi.SettlementRecord;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles one AMQP delivery with RabbitMQ's rules. Every channel operation runs on the delivering
 * session's single settler thread, on the channel that received the delivery — a delivery tag
 * means nothing on any other channel. Once that channel is gone (connection or channel lost,
 * consumer closed), RabbitMQ has requeued the delivery: every method then throws
 * {@link io.idem.IdempotencyException} instead of settling, and the redelivery is deduplicated by
 * the store. Nothing is acked on a new channel after a recovery.
 *
 * <ul>
 *   <li>{@link #ack()}: {@code basicAck(tag, multiple=false)}. In a batch (an instance made with
 *       the batch's {@link BatchAcks}), the tag is handed to the batch instead, which acks all of
 *       them with one settler hand-off once the batch is done — with one {@code basicAck(tag,
 *       multiple=true)} where they are the channel's lowest unsettled tags (see {@link BatchAcks}).
 *   <li>{@link #retry(Duration)}: the delivery is held unacknowledged on this consumer for
 *       {@code delay} (cut to what is left of {@link RabbitConsumerConfig#maxHold()} since it
 *       arrived, so that the broker's {@code consumer_timeout} never closes the channel for it),
 *       then {@code basicReject(tag, requeue=true)} returns it to the
 *       queue, where it is delivered again at once (to any consumer). The wait is a task on the
 *       settler thread: it blocks no thread, neither the connection's I/O nor a worker. While it
 *       waits, the delivery uses one prefetch slot. If the channel is lost or the consumer closed
 *       during the wait, RabbitMQ requeues the delivery earlier than {@code delay}. A reject, not a
 *       nack: it says the processing failed, which RabbitMQ 4.3+ counts in a quorum queue's
 *       {@code x-delivery-count} (the attempt the next delivery reads) and a nack does not;
 *       earlier versions count both. The adapter also remembers the failure in process, so the
 *       next delivery is one attempt later even if the broker's counter did not move.
 *   <li>{@link #retryWhenStoreAvailable(Duration)}: the delivery stays unacknowledged on its
 *       channel — no {@code basicNack} or {@code basicReject}, which on a quorum queue may raise
 *       {@code x-delivery-count} toward {@code x-delivery-limit} — and after {@code delay} it is
 *       handed to the consumer's workers again, with the attempt it had, and runs through the
 *       pipeline once more. The wait is a task on the settler thread (no thread blocked) and
 *       holds one prefetch slot. Closing the consumer or losing the channel during the wait
 *       returns the delivery to the queue as for any unacknowledged one. Once the delivery has
 *       been held for {@link RabbitConsumerConfig#maxHold()}, it is handed back instead with
 *       {@code basicNack(tag, multiple=false, requeue=true)} (not counted by RabbitMQ 4.3+, counted
 *       toward the delivery limit before) and runs again when redelivered, with the same attempt.
 *   <li>{@link #release()} (the consumer is closing and interrupted the handler):
 *       {@code basicNack(tag, multiple=false, requeue=true)} at once, handed to the settler thread
 *       without waiting for it (the worker's interrupt flag is set). RabbitMQ 4.3+ does not count a
 *       {@code basic.nack} toward a quorum queue's {@code x-delivery-limit} ({@code basic.reject}
 *       would: it says the processing failed), so a shutdown uses up no attempt there; older
 *       versions count every return, a closing channel's too. Should the nack not run before the
 *       connection closes, the close returns the delivery just the same.
 *   <li>{@link #deadLetter(DeadLetterReason)}: a persistent copy — original body, properties and
 *       headers (without {@code x-delivery-count}), plus {@link DeadLetterReason#toHeaders()} — is
 *       published with {@code mandatory} to the queue's dead-letter exchange (routing key: the
 *       configured {@code x-dead-letter-routing-key}, else the delivery's own), and only after the
 *       broker confirmed it and routed it to a queue is the original acked. {@code basicReject
 *       (requeue=false)} is not used: RabbitMQ's own dead-lettering cannot add the reason headers
 *       and would store a second, reasonless copy. If the copy is not confirmed, this throws and
 *       the original stays for redelivery; if the channel is lost between the copy and the ack, the
 *       message can be dead-lettered twice.
 * </ul>
 *
 * <p>A method whose wait for the settler thread is interrupted throws with the outcome unknown,
 * while the settler carries on. An ack handed to the settler, and a dead-letter whose copy was
 * confirmed, count as settled from then on: the delivery is never {@code basicNack}ed after them
 * (if the ack is not made, the channel is gone and RabbitMQ redelivers the message; the store
 * deduplicates it). A dead-letter whose copy was refused is not settled.
 *
 * <p>Thread-safe; each instance settles one delivery, once.
 */
public final class RabbitAcknowledgement implements Acknowledgement {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);
  private final Delivery delivery;
  private final RabbitConsumerConfig config;
  private final DeliveryAttempts attempts;
  private final int attempt;
  private final Consumer<Delivery> rerun;
  private final @Nullable BatchAcks batch;
  private final SettlementRecord record = new SettlementRecord();

  /**
   * @param attempt the delivery attempt the pipeline saw
   * @param rerun hands a delivery to the workers again; called on the settler thread, must not
   *     block
   * @param batch the acks of the batch the delivery belongs to, or {@code null} (per-message mode)
   */
  RabbitAcknowledgement(Delivery delivery, RabbitConsumerConfig config, DeliveryAttempts attempts,
      int attempt, Consumer<Delivery> rerun, @Nullable BatchAcks batch) {
    this.delivery = Objects.requireNonNull(delivery, "delivery");
    this.config = Objects.requireNonNull(config, "config");
    this.attempts = Objects.requireNonNull(attempts, "attempts");
    this.attempt = attempt;
    this.rerun = Objects.requireNonNull(rerun, "rerun");
    this.batch = batch;
  }

  /**
   * @throws io.idem.IdempotencyException when the delivering channel is gone, or the wait for the
   *     ack was interrupted (the ack is still made; the delivery counts as settled). In a batch, only
   *     when the channel is already gone: the ack is sent with the batch's ({@link BatchAcks#flush()})
   */
  @Override
  public void ack() {
    long tag = delivery.tag();
    String what = "basicAck of tag " + tag;
    if (batch != null) {
      delivery.session().checkOpen(what);
      batch.add(delivery);
      record.markSettled(); // the batch acks it once the batch is done, unless the channel is gone
      return;
    }
    Future<?> done = delivery.session().submit(what, (consume, publish) -> delivery.session().ack(consume, tag));
    record.markSettled(); // handed over: if the ack is not made, the channel is gone and RabbitMQ requeued it
    delivery.session().await(what, done);
    attempts.forget(delivery.properties(), delivery.body());
  }

  /** @throws io.idem.IdempotencyException when the delivering channel is already gone */
  @Override
  public void retry(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    long tag = delivery.tag();
    Duration hold = min(delay, leftToHold());
    attempts.failed(delivery.properties(), delivery.body(), attempt);
    delivery.session().schedule("basicReject(requeue) of tag " + tag, hold,
        (consume, publish) -> {
          delivery.session().rejectRequeue(consume, tag);
        });
    record.markSettled();
  }

  /** @throws io.idem.IdempotencyException when the delivering channel is already gone */
  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    Objects.requireNonNull(delay, "delay");
    Duration left = leftToHold();
    if (delay.compareTo(left) < 0) {
      Delivery again = delivery.withAttempt(attempt);
      delivery.session().later("re-run of tag " + delivery.tag() + " after a store outage", delay,
          () -> rerun.accept(again));
    } else {
      long tag = delivery.tag();
      delivery.session().schedule("basicNack(requeue) of tag " + tag + " held for maxHold " + config.maxHold(),
          left, (consume, publish) -> {
            attempts.handedBack(delivery.properties(), delivery.body(), attempt);
            delivery.session().nackRequeue(consume, tag);
            LOG.info("{} of {} held unacknowledged for maxHold {} through a store outage: handed back to"
                + " the queue (basic.nack requeue) before the broker's consumer_timeout; it runs again, as"
                + " attempt {}, when redelivered", delivery, config.queue(), config.maxHold(), attempt);
          });
    }
    record.markHeldForStore(delay);
    record.markSettled(); // held on the settler thread: the worker has nothing left to return
  }

  /** What is left of {@link RabbitConsumerConfig#maxHold()} since the delivery arrived; never negative. */
  private Duration leftToHold() {
    Duration left = config.maxHold().minus(Duration.between(delivery.receivedAt(), Instant.now()));
    return left.isNegative() ? Duration.ZERO : left;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  /**
   * Returns the delivery to the queue unacknowledged, without waiting (see the class description).
   *
   * @throws io.idem.IdempotencyException when the delivering channel is already gone (RabbitMQ
   *     requeued the delivery then)
   */
  @Override
  public void release() {
    long tag = delivery.tag();
    delivery.session().schedule("basicNack(requeue) of tag " + tag + " released at shutdown", Duration.ZERO,
        (consume, publish) -> {
          delivery.session().nackRequeue(consume, tag);
        });
    record.markReleased();
    record.markSettled();
  }

  /**
   * @throws io.idem.IdempotencyException when the copy was not confirmed or not routed, or the
   *     delivering channel is gone; the original is then not acked. Also when the wait was
   *     interrupted: then the copy and the ack may still be made (see {@link #settled()})
   */
  @Override
  public void deadLetter(DeadLetterReason reason) {
    Objects.requireNonNull(reason, "reason");
    long tag = delivery.tag();
    String exchange = config.deadLetterExchange();
    String routingKey = config.deadLetterRoutingKey() != null
        ? config.deadLetterRoutingKey()
        : delivery.envelope().getRoutingKey();
    AMQP.BasicProperties copy = deadLetterProperties(delivery.properties(), reason);
    String what = "dead-letter of tag " + tag + " to exchange '" + exchange + "'";
    Future<?> done = delivery.session().submit(what, (consume, publish) -> {
      delivery.session().publishConfirmed(exchange, routingKey, copy, delivery.body());
      record.markSettled(); // the copy is stored: from now on the original is only ever acked
      delivery.session().ack(consume, tag);
    });
    delivery.session().await(what, done);
    attempts.forget(delivery.properties(), delivery.body());
  }

  /**
   * Whether this delivery is settled, or will be by a task already on the settler thread: its
   * {@code basicAck} was handed to the settler, its dead-letter copy was confirmed (the ack follows
   * on the same thread), or its {@code basicNack} or re-run was scheduled. Then nobody else may
   * return it to the queue: a second settlement of a tag is a channel error, which closes the
   * channel and requeues every delivery in flight on it. A dead-letter whose copy is still being
   * published is not settled yet; read this on the settler thread, after that task, to know
   * whether the copy was stored.
   */
  boolean settled() {
    return record.isSettled();
  }

  /** {@link #settled()} as the worker reads it ({@link io.idem.spi.AdapterWorker#survive}). */
  SettlementRecord record() {
    return record;
  }

  static AMQP.BasicProperties deadLetterProperties(AMQP.BasicProperties original, DeadLetterReason reason) {
    Map<String, Object> headers = new LinkedHashMap<>();
    if (original.getHeaders() != null) {
      headers.putAll(original.getHeaders());
    }
    headers.remove(DeliveryAttempts.DELIVERY_COUNT_HEADER);
    headers.remove(DeliveryAttempts.ACQUIRED_COUNT_HEADER);
    headers.putAll(reason.toHeaders());
    return original.builder()
        .headers(headers)
        .deliveryMode(2) // persistent: the dead letter must survive a broker restart
        .expiration(null) // a dead letter does not expire with the original's TTL
        .userId(null) // RabbitMQ rejects a user-id that is not the publishing connection's user
        .build();
  }

  @Override
  public String toString() {
    return "RabbitAcknowledgement[queue=" + config.queue() + ", tag=" + delivery.tag()
        + ", session=" + delivery.session().generation + "]";
  }
}
