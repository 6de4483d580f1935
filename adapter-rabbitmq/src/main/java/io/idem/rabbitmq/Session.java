package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import io.idem.IdempotencyException;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One generation of the consumer's broker state: a consuming connection with its consuming
 * channel, a second connection with a publisher-confirm channel for dead-letter copies, and the
 * single settler thread that performs every operation on those channels (acks, delayed returns,
 * dead-letter publishes, cancel), so that no channel is used from two threads and no delivery tag
 * is ever used on another channel.
 *
 * <p>Two connections, because RabbitMQ blocks every connection that publishes while a memory or
 * disk alarm is in effect ({@code connection.blocked}): the consuming connection never publishes,
 * so an alarm cannot stop its acks and returns — only the dead-letter publish waits (and fails
 * after {@link RabbitConsumerConfig#confirmTimeout()}, leaving the original for redelivery).
 *
 * <p>When anything of it shuts down, the whole session is lost: it never comes back. Its
 * deliveries cannot be settled any more (RabbitMQ requeued them when the channel closed); the
 * owner opens a new session.
 */
final class Session {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);
  /** Appended to the connection name for the dead-letter publishing connection: {@value}. */
  static final String DEAD_LETTER_CONNECTION_SUFFIX = ":dead-letters";

  /** An operation on the session's channels, run on its settler thread. */
  interface ChannelOp {
    void run(Channel consume, Channel publish) throws Exception;
  }

  final long generation;
  private final RabbitConsumerConfig config;
  private final Connection connection;
  private final Connection publishing;
  private final Channel consume;
  private final Channel publish;
  private final ScheduledThreadPoolExecutor settler;
  private final AtomicBoolean open = new AtomicBoolean(true);
  private final AtomicReference<@Nullable Return> returned = new AtomicReference<>();
  private final AtomicInteger held = new AtomicInteger();
  /**
   * Tags delivered on the consuming channel and not settled yet: added on the client's dispatch
   * thread before a delivery reaches the buffer, removed on the settler thread once the channel
   * call that settles it returned. Tags grow with each delivery, so on the settler thread every
   * tag below one in here that is not in here any more was settled.
   */
  private final ConcurrentSkipListSet<Long> unsettled = new ConcurrentSkipListSet<>();
  private volatile @Nullable String consumerTag;

  private Session(long generation, RabbitConsumerConfig config, Connection connection,
      Connection publishing, Channel consume, Channel publish) {
    this.generation = generation;
    this.config = config;
    this.connection = connection;
    this.publishing = publishing;
    this.consume = consume;
    this.publish = publish;
    this.settler = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "idem-rabbit-settle-" + config.queue() + "-" + generation);
      t.setDaemon(true);
      return t;
    });
    settler.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    settler.setRemoveOnCancelPolicy(true);
  }

  /**
   * Connects, prepares the topology, and starts consuming into {@code sink}.
   *
   * @param onLost called once, from a client thread, when the session is lost; must not block
   */
  static Session open(
      long generation,
      ConnectionFactory factory,
      RabbitConsumerConfig config,
      Consumer<Delivery> sink,
      Consumer<Session> onLost) throws IOException, TimeoutException {
    Connection connection = factory.newConnection(config.connectionName());
    Connection publishing = null;
    try {
      Topology.prepare(connection, config);
      publishing = factory.newConnection(config.connectionName() + DEAD_LETTER_CONNECTION_SUFFIX);
      Channel consume = connection.createChannel();
      Channel publish = publishing.createChannel();
      publish.confirmSelect();
      Session session = new Session(generation, config, connection, publishing, consume, publish);
      publish.addReturnListener(session.returned::set);
      connection.addShutdownListener(cause -> session.lost(cause, onLost));
      publishing.addShutdownListener(cause -> session.lost(cause, onLost));
      consume.addShutdownListener(cause -> session.lost(cause, onLost));
      publish.addShutdownListener(cause -> session.lost(cause, onLost));
      consume.basicQos(config.prefetch());
      session.consumerTag = consume.basicConsume(config.queue(), false, new DefaultConsumer(consume) {
        @Override
        public void handleDelivery(
            String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
          session.unsettled.add(envelope.getDeliveryTag());
          sink.accept(new Delivery(session, envelope, properties, body, Instant.now(), 0));
        }

        @Override
        public void handleCancel(String tag) {
          // the broker cancelled us (queue deleted, node down): like a lost channel
          session.lost(new ShutdownSignalException(false, false, null, "consumer cancelled by broker"),
              onLost);
        }
      });
      return session;
    } catch (IOException | RuntimeException e) {
      closeQuietly(connection);
      if (publishing != null) {
        closeQuietly(publishing);
      }
      throw e;
    }
  }

  /** Connection and channels open, and the consumer registered. */
  boolean isConsuming() {
    return open.get() && consumerTag != null && consume.isOpen() && publish.isOpen();
  }

  /** Deliveries waiting on the settler thread for a backoff, a store outage or a return. */
  int held() {
    return open.get() ? held.get() : 0;
  }

  /** The broker's version ({@code version} server property), e.g. {@code 3.10.8}; or "unknown". */
  String serverVersion() {
    Object version = connection.getServerProperties().get("version");
    return version == null ? "unknown" : version.toString();
  }

  /** The connection that consumes and settles; it never publishes. For tests. */
  Connection consumingConnection() {
    return connection;
  }

  /** The connection dead-letter copies are published on. For tests. */
  Connection publishingConnection() {
    return publishing;
  }

  boolean isOpen() {
    return open.get();
  }

  private void lost(ShutdownSignalException cause, Consumer<Session> onLost) {
    if (open.compareAndSet(true, false)) {
      if (!cause.isInitiatedByApplication()) {
        onLost.accept(this);
      }
    }
  }

  /**
   * {@code basicAck(tag, multiple=false)} on {@code channel}, then {@code tag} counts as settled
   * (see {@link #ackAll}). Settler thread only, like every settling call below.
   */
  void ack(Channel channel, long tag) throws IOException {
    channel.basicAck(tag, false);
    unsettled.remove(tag);
  }

  /** {@code basicReject(tag, requeue=true)} on {@code channel}, then {@code tag} counts as settled. */
  void rejectRequeue(Channel channel, long tag) throws IOException {
    channel.basicReject(tag, true);
    unsettled.remove(tag);
  }

  /** {@code basicNack(tag, multiple=false, requeue=true)} on {@code channel}, then {@code tag} counts as settled. */
  void nackRequeue(Channel channel, long tag) throws IOException {
    channel.basicNack(tag, false, true);
    unsettled.remove(tag);
  }

  /**
   * Acks {@code tags} (ascending, each delivered on this session's channel and not settled) with
   * as few frames as RabbitMQ allows: one {@code basicAck(tag, multiple=true)} for the longest run
   * of them, from the lowest, that are exactly the lowest unsettled tags of the channel — so that
   * the multiple ack covers nothing else: no delivery held for a backoff, a store outage or a
   * return, nor one of another worker's batch — then {@code basicAck(tag, multiple=false)} for each
   * of the others. Settler thread only.
   */
  void ackAll(Channel channel, List<Long> tags) throws IOException {
    int run = 0;
    for (long lowest : unsettled) {
      if (run == tags.size() || lowest != tags.get(run)) {
        break;
      }
      run++;
    }
    if (run > 1) {
      channel.basicAck(tags.get(run - 1), true);
      unsettled.removeAll(tags.subList(0, run));
    } else {
      run = 0;
    }
    for (long tag : tags.subList(run, tags.size())) {
      ack(channel, tag);
    }
  }

  /** Marks the session lost (no further settlement) without closing it; for the owner. */
  void markLost() {
    open.set(false);
  }

  /**
   * Runs {@code op} on the settler thread and waits for it: {@link #await} of {@link #submit}.
   *
   * @throws IdempotencyException when the session is lost (the delivery is left to RabbitMQ's
   *     redelivery), the operation failed, or the wait was interrupted
   */
  void call(String what, ChannelOp op) {
    await(what, submit(what, op));
  }

  /**
   * @throws IdempotencyException when the session is lost: nothing {@code what} names can be
   *     settled on it any more
   */
  void checkOpen(String what) {
    if (!open.get()) {
      throw lostError(what);
    }
  }

  /**
   * Hands {@code op} to the settler thread, which runs it unless the session is lost by then.
   * Once this returned, {@code op} runs (or the session is lost) whatever becomes of the caller.
   *
   * @throws IdempotencyException when the session is already lost; {@code op} is then not run
   */
  Future<?> submit(String what, ChannelOp op) {
    if (!open.get()) {
      throw lostError(what);
    }
    try {
      return settler.submit(() -> {
        if (!open.get()) {
          throw lostError(what);
        }
        op.run(consume, publish);
        return null;
      });
    } catch (RejectedExecutionException e) {
      throw lostError(what);
    }
  }

  /**
   * Waits for an operation {@link #submit submitted} as {@code what}.
   *
   * @throws IdempotencyException when it failed or the session was lost before it ran, or when
   *     the wait was interrupted: then its outcome is unknown (it still runs on the settler
   *     thread) and the interrupt flag is set again
   */
  void await(String what, Future<?> done) {
    try {
      done.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdempotencyException(what + " interrupted; its outcome is unknown", e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IdempotencyException idem) {
        throw idem;
      }
      throw new IdempotencyException(
          what + " failed on channel " + consume.getChannelNumber() + " of connection generation "
              + generation + ": " + cause + "; RabbitMQ redelivers the message", cause);
    }
  }

  /**
   * Runs {@code op} on the settler thread after {@code delay}, unless the session is lost or
   * closed by then (RabbitMQ has requeued the delivery already).
   *
   * @throws IdempotencyException when the session is already lost
   */
  void schedule(String what, Duration delay, ChannelOp op) {
    if (!open.get()) {
      throw lostError(what);
    }
    held.incrementAndGet();
    try {
      settler.schedule(() -> {
        held.decrementAndGet();
        if (!open.get()) {
          LOG.debug("{} skipped: session {} is gone and RabbitMQ requeued the delivery", what, generation);
          return;
        }
        try {
          op.run(consume, publish);
        } catch (Exception e) {
          LOG.warn("{} failed on session {}: {}; RabbitMQ redelivers the message", what, generation, e.toString());
        }
      }, Math.max(0, delay.toNanos()), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      held.decrementAndGet();
      throw lostError(what);
    }
  }

  /**
   * Runs {@code task} on the settler thread after {@code delay}, unless the session is lost or
   * closed by then (RabbitMQ has requeued its deliveries already). The task must not block: it
   * shares the thread with every ack.
   *
   * @throws IdempotencyException when the session is already lost
   */
  void later(String what, Duration delay, Runnable task) {
    schedule(what, delay, (consume, publish) -> task.run());
  }

  /**
   * Publishes a persistent, mandatory copy on the confirm channel and waits for the broker's
   * confirm. Settler thread only.
   *
   * @throws IdempotencyException when the broker nacked it, routed it nowhere, or did not confirm
   *     within {@link RabbitConsumerConfig#confirmTimeout()}
   */
  void publishConfirmed(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body)
      throws IOException, InterruptedException {
    returned.set(null);
    publish.basicPublish(exchange, routingKey, true, properties, body);
    boolean acked;
    try {
      acked = publish.waitForConfirms(config.confirmTimeout().toMillis());
    } catch (TimeoutException e) {
      throw new IdempotencyException("no publisher confirm from RabbitMQ for the copy sent to exchange '"
          + exchange + "' within " + config.confirmTimeout(), e);
    }
    if (!acked) {
      throw new IdempotencyException("RabbitMQ nacked the copy sent to exchange '" + exchange + "'");
    }
    Return r = returned.getAndSet(null);
    if (r != null) {
      throw new IdempotencyException("exchange '" + exchange + "' routed the copy with routing key '"
          + routingKey + "' to no queue (" + r.getReplyCode() + " " + r.getReplyText()
          + "): bind a queue to it");
    }
  }

  /** Cancels the consumer (no new deliveries); waits for the broker's cancel-ok. */
  void cancelConsumer() {
    String tag = consumerTag;
    if (tag != null && open.get()) {
      try {
        call("basicCancel", (c, p) -> c.basicCancel(tag));
      } catch (IdempotencyException e) {
        LOG.warn("could not cancel consumer {} on {}: {}", tag, config.queue(), e.getMessage());
      }
    }
  }

  /**
   * Ends the session: pending delayed retries are dropped, the settler finishes its current
   * operation, then the connection is closed — RabbitMQ requeues whatever was not acked.
   */
  void close(Duration timeout) {
    open.set(false);
    settler.shutdown();
    try {
      if (!settler.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        settler.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      settler.shutdownNow();
    }
    closeQuietly(connection);
    closeQuietly(publishing);
  }

  private static void closeQuietly(Connection connection) {
    try {
      if (connection.isOpen()) {
        connection.close(5_000);
      }
    } catch (Exception e) {
      connection.abort(1_000);
    }
  }

  private IdempotencyException lostError(String what) {
    return new IdempotencyException(
        what + " not done: channel " + consume.getChannelNumber() + " of connection generation "
            + generation + " is gone, so its delivery tags are void; RabbitMQ requeued the"
            + " delivery and redelivers it, and the store deduplicates");
  }

  @Override
  public String toString() {
    return "Session[" + generation + ", " + connection + "]";
  }
}
