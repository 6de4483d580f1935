package io.idem.rabbitmq;

import io.idem.IdempotencyException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The acks of one batch: each {@link RabbitAcknowledgement#ack()} of the batch (called after its
 * own transaction committed — the batch's, or its own in the one-by-one redo) hands its tag here,
 * and {@link #flush()}, once the batch is done, sends them all with one hand-off to the session's
 * settler thread. There one {@code basicAck(tag, multiple=true)} acks the longest run of them,
 * from the lowest, that are exactly the channel's lowest unsettled tags, and the others are acked
 * one by one ({@link Session#ackAll}). So a multiple ack never covers a delivery that is not
 * acked here: one held for a retry backoff, through a store outage or for a return, one of another
 * worker's batch, one being dead-lettered.
 *
 * <p>Worker-confined apart from {@link #add}, which the pipeline calls on the worker thread too;
 * synchronized all the same. If the channel is gone by the flush, RabbitMQ has requeued the
 * deliveries and the store acks them as duplicates when they come back.
 */
final class BatchAcks {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);
  private final Session session;
  private final DeliveryAttempts attempts;
  private final List<Delivery> acked = new ArrayList<>();

  BatchAcks(Session session, DeliveryAttempts attempts) {
    this.session = Objects.requireNonNull(session, "session");
    this.attempts = Objects.requireNonNull(attempts, "attempts");
  }

  /** {@code delivery}, of this batch's session, committed: to be acked by {@link #flush()}. */
  synchronized void add(Delivery delivery) {
    if (delivery.session() != session) {
      throw new IllegalArgumentException(delivery + " is not of session " + session.generation);
    }
    acked.add(delivery);
  }

  /**
   * Acks every delivery {@link #add added} since the last flush and waits for the settler thread.
   * A failure is logged, not thrown: the deliveries count as settled (see {@link
   * RabbitAcknowledgement}), and the channel is gone or going, so RabbitMQ redelivers them.
   */
  synchronized void flush() {
    if (acked.isEmpty()) {
      return;
    }
    List<Long> tags = acked.stream().map(Delivery::tag).sorted().distinct().toList();
    String what = "basicAck of " + tags.size() + " tag(s) of a batch, " + tags.get(0) + ".." + tags.get(tags.size() - 1);
    List<Delivery> done = List.copyOf(acked);
    acked.clear();
    try {
      session.call(what, (consume, publish) -> session.ackAll(consume, tags));
    } catch (IdempotencyException e) {
      LOG.warn("{}: {}", what, e.getMessage());
      return;
    }
    for (Delivery delivery : done) {
      attempts.forget(delivery.properties(), delivery.body());
    }
  }
}
