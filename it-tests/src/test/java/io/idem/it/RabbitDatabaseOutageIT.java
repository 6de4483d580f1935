package io.idem.it;

import io.idem.fixtures.RabbitFixture;

/**
 * {@link DatabaseOutageTestBase} on RabbitMQ (the demo's quorum queue, prefetch 50, 4 workers).
 * AMQP reports only the queue's ready messages, and RabbitMQ's own totals for quorum queues lag by
 * its statistics interval; but the consumer holds a full prefetch window while more messages are
 * ready, so every ack during the cut would let RabbitMQ deliver a ready message to it at once:
 * a ready count that does not drop means nothing was acked. The session is the consumer's
 * connection: the same broker-side connection before and after, so nothing was returned by a
 * reconnect.
 */
class RabbitDatabaseOutageIT extends DatabaseOutageTestBase {
  /** The demo consumer's prefetch. */
  private static final int PREFETCH = 50;

  @Override
  protected String brokerName() {
    return "rabbitmq";
  }

  /** Ready only: the consumer holds up to its prefetch unacknowledged besides. */
  @Override
  protected long minimumUnacknowledgedDuringCut(int publishedDuringCut) {
    return publishedDuringCut - PREFETCH;
  }

  /** Broker-side ids of the consumer's connection (the demo names it {@code idem-demo-<queue>}). */
  @Override
  protected Object brokerSession() {
    java.util.List<String> pids = RabbitFixture.shared().connectionPids("idem-demo-" + destination);
    if (pids.isEmpty()) {
      throw new IllegalStateException("no connection named idem-demo-" + destination + " on RabbitMQ");
    }
    return pids;
  }
}
