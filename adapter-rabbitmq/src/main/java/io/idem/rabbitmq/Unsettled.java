package io.idem.rabbitmq;

import com.rabbitmq.client.Channel;
import io.idem.IdempotencyException;
import java.io.IOException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a worker does with a delivery whose processing threw: returns it to the queue with a
 * delayed {@code basicNack(requeue=true)} unless it is settled — never a second settlement of a
 * tag, which RabbitMQ answers by closing the channel and requeueing everything in flight on it.
 */
final class Unsettled {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);

  private Unsettled() {}

  /**
   * Returns an unsettled delivery to the queue after {@code delay}: not acked, and not held for ever
   * on a live channel. Logs why.
   */
  static void giveBack(String queue, Delivery delivery, @Nullable RabbitAcknowledgement acknowledgement,
      Throwable failure, Duration delay) {
    // interrupted while waiting for the settler: the settlement it handed over still runs there
    boolean underWay =
        failure instanceof IdempotencyException && failure.getCause() instanceof InterruptedException;
    if (acknowledgement != null && acknowledgement.settled()) {
      if (failure instanceof IdempotencyException) {
        // a basicNack now would hit a settled tag: a channel error, which requeues all in flight
        LOG.warn("{} of {} counts as settled, not returned: {}", delivery, queue, failure.toString());
      } else {
        LOG.error("processing {} of {} threw after the delivery was settled; nothing to return", delivery,
            queue, failure);
      }
      return;
    }
    Session session = delivery.session();
    if (!session.isOpen()) {
      LOG.warn("{} of {} not settled, its channel is gone and RabbitMQ requeued it: {}", delivery,
          queue, failure.toString());
      return;
    }
    // Not settled on a live channel (the dead-letter copy was refused, or something threw): return
    // it after a pause rather than hold it forever or loop on it.
    if (underWay) {
      LOG.warn("{} of {}: {}; unless that settles it first, it is returned to the queue in {}", delivery,
          queue, failure.getMessage(), delay);
    } else {
      LOG.error("{} of {} not settled; returning it to the queue in {}", delivery, queue, delay, failure);
    }
    try {
      session.schedule("basicNack(requeue) of unsettled tag " + delivery.tag(), delay,
          (consume, publish) -> returnUnlessSettled(queue, delivery, acknowledgement, underWay, consume));
    } catch (IdempotencyException lost) {
      LOG.debug("channel gone meanwhile; RabbitMQ requeued tag {}", delivery.tag());
    }
  }

  /**
   * Settler thread: every settlement handed over before this ran already, so {@code settled()} is
   * final here (a dead-letter interrupted while its copy was published may have stored it since).
   */
  private static void returnUnlessSettled(String queue, Delivery delivery,
      @Nullable RabbitAcknowledgement acknowledgement, boolean underWay, Channel consume) throws IOException {
    if (acknowledgement != null && acknowledgement.settled()) {
      LOG.debug("{} of {} was settled meanwhile; not returned", delivery, queue);
      return;
    }
    if (underWay) {
      LOG.error("{} of {} was not settled by the settlement under way; returning it to the queue", delivery,
          queue);
    }
    consume.basicNack(delivery.tag(), false, true);
  }
}
