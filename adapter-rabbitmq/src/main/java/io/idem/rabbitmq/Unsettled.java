package io.idem.rabbitmq;

import com.rabbitmq.client.Channel;
import io.idem.IdempotencyException;
import java.io.IOException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * RabbitMQ's {@link io.idem.spi.AdapterWorker.HandBack}: returns a delivery whose processing threw
 * and that {@link io.idem.spi.AdapterWorker#survive} found unsettled to the queue with a delayed
 * {@code basicNack(requeue=true)}, unless it is settled by then — never a second settlement of a
 * tag, which RabbitMQ answers by closing the channel and requeueing everything in flight on it.
 */
final class Unsettled {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);

  private Unsettled() {}

  /**
   * Returns an unsettled delivery to the queue after {@code delay}: not acked, and not held for ever
   * on a live channel.
   */
  static void giveBack(String queue, Delivery delivery, @Nullable RabbitAcknowledgement acknowledgement,
      Throwable failure, Duration delay) {
    // interrupted while waiting for the settler: the settlement it handed over still runs there
    boolean underWay =
        failure instanceof IdempotencyException && failure.getCause() instanceof InterruptedException;
    Session session = delivery.session();
    if (!session.isOpen()) {
      LOG.warn("{} of {} not settled, its channel is gone and RabbitMQ requeued it: {}", delivery,
          queue, failure.toString());
      return;
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
    delivery.session().nackRequeue(consume, delivery.tag());
  }
}
