package io.idem.jms;

import io.idem.IdempotentConsumer;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker of a {@link JmsIdempotentConsumer}: its own connection, one session, one consumer,
 * one thread, one message (or one {@link JmsBatch batch}) at a time. A JMS session is single-threaded, so nothing here is shared
 * with other workers; {@link #stop()} and {@link #abort()} are the only calls from other threads.
 */
final class JmsWorker implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(JmsIdempotentConsumer.class);

  private final JmsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final String name;
  private final JmsBrokerLimits limits;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile boolean stopping;
  private volatile boolean broken;
  private volatile boolean failed;
  private volatile @Nullable Connection connection;
  private @Nullable Session session;
  private @Nullable MessageConsumer consumer;
  private @Nullable MessageProducer deadLetterProducer;
  private volatile @Nullable Instant lastReceive;
  private volatile boolean holding;
  private final JmsBatch batches;
  /** Messages still to take one at a time after a batch with an unreadable message. */
  private int oneByOne;

  JmsWorker(JmsConsumerConfig config, IdempotentConsumer<?> pipeline, String name, JmsBrokerLimits limits) {
    this.limits = limits;
    this.config = config;
    this.pipeline = pipeline;
    this.name = name;
    this.batches = new JmsBatch(config, pipeline, limits, name, new JmsBatch.Worker() {
      @Override
      public void hold(Duration duration) {
        JmsWorker.this.hold(duration);
      }

      @Override
      public boolean mustStop() {
        return stopping || broken || Thread.currentThread().isInterrupted();
      }

      @Override
      public void unsettle(Session session) {
        JmsWorker.this.unsettle(session);
      }

      @Override
      public void holding(boolean on) {
        holding = on;
      }
    });
  }

  String name() {
    return name;
  }

  /**
   * Whether this worker ended before {@link #stop()} or {@link #abort()} was asked (a fatal error,
   * an interrupt); it then takes no more messages.
   */
  boolean failed() {
    return failed;
  }

  /** Whether this worker holds a live connection (opened, no exception reported since). */
  boolean connected() {
    return connection != null && !broken;
  }

  /** When a receive last returned without an error (a message or an empty wait), or {@code null}. */
  @Nullable Instant lastReceive() {
    return lastReceive;
  }

  /** Whether this worker holds a message for a retry backoff or a store outage right now. */
  boolean holding() {
    return holding;
  }

  /** Opens connection, session, consumer and dead-letter producer. */
  void connect() throws JMSException {
    Connection c = config.connectionFactory().createConnection();
    connection = c;
    broken = false;
    c.setExceptionListener(e -> {
      broken = true;
      LOG.warn("JMS connection of {} on {} failed: {}", name, config.queue(), e.toString());
    });
    boolean transacted = config.sessionMode() == JmsSessionMode.TRANSACTED;
    Session s = c.createSession(transacted, transacted ? Session.SESSION_TRANSACTED : Session.CLIENT_ACKNOWLEDGE);
    Queue queue = s.createQueue(config.queue());
    consumer = config.messageSelector() == null
        ? s.createConsumer(queue)
        : s.createConsumer(queue, config.messageSelector());
    deadLetterProducer = s.createProducer(s.createQueue(config.deadLetterQueue()));
    session = s;
    c.start();
  }

  @Override
  public void run() {
    try {
      while (!stopping) {
        try {
          if (consumer == null || broken) {
            disconnect();
            if (!pause()) {
              break;
            }
            connect();
            LOG.info("{} reconnected to {}", name, config.queue());
            continue;
          }
          Message message = consumer.receive(config.receiveTimeout().toMillis());
          lastReceive = Instant.now();
          if (message == null) {
            continue;
          }
          if (stopping) {
            break; // received while closing: closing the session returns it unsettled
          }
          List<Message> batch = more(message);
          if (batch.size() == 1) {
            process(message);
          } else {
            processBatch(batch);
          }
          if (Thread.currentThread().isInterrupted()) {
            if (stopping) {
              // close() interrupted the handler: its message went back to the broker
              LOG.debug("{} on {} stops: interrupted by close()", name, config.queue());
              break;
            }
            Thread.interrupted();
            LOG.warn("{}: processing a message of {} left the worker interrupted; the flag is cleared:"
                + " the consumer's workers are stopped by close(), and the flag would fail the next"
                + " message", name, config.queue());
          }
        } catch (JMSException | RuntimeException e) {
          if (stopping) {
            break;
          }
          broken = true;
          LOG.warn("{} on {} failed; reconnecting in {} ms: {}",
              name, config.queue(), config.reconnectBackoff().toMillis(), e.toString());
        }
      }
    } finally {
      if (!stopping) {
        failed = true;
        LOG.error("{} on {} stopped while the consumer runs: isRunning() is false from now on; close the"
            + " consumer and start a new one", name, config.queue());
      }
      // closing while interrupted could leave the session to the broker's connection TTL, holding
      // its prefetched messages: the flag is cleared for the close and set again
      boolean interrupted = Thread.interrupted();
      disconnect();
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      stopped.countDown();
    }
  }

  /**
   * {@code first} and what the session's consumer has at once behind it ({@code receiveNoWait}),
   * up to {@link JmsConsumerConfig#maxBatchSize()}: a batch never waits for more.
   */
  private List<Message> more(Message first) throws JMSException {
    List<Message> batch = new ArrayList<>();
    batch.add(first);
    if (oneByOne > 0) {
      oneByOne--;
      return batch;
    }
    MessageConsumer c = consumer;
    while (c != null && batch.size() < config.maxBatchSize() && !stopping) {
      Message next = c.receiveNoWait();
      if (next == null) {
        break;
      }
      batch.add(next);
    }
    return batch;
  }

  /**
   * Runs a batch through {@link JmsBatch}. Whatever escapes rolls back or recovers the session so
   * the broker redelivers the whole batch (what was applied is then acked as a duplicate), as
   * {@link #process} does for one message.
   */
  private void processBatch(List<Message> batch) {
    Session s = session;
    MessageProducer dlq = deadLetterProducer;
    if (s == null || dlq == null) {
      throw new IllegalStateException(name + " is not connected");
    }
    try {
      JmsBatch.End end = batches.run(batch, s, dlq);
      if (end == JmsBatch.End.UNREADABLE) {
        oneByOne = batch.size();
      }
    } catch (Throwable e) {
      if (e instanceof VirtualMachineError) {
        failed = true;
        try {
          LOG.error("{}: processing a batch of {} messages of {} failed fatally; rolled back for"
              + " redelivery, and this worker stops", name, batch.size(), config.queue(), e);
          unsettle(s);
        } catch (Throwable secondary) {
          e.addSuppressed(secondary);
        }
        throw (VirtualMachineError) e;
      }
      LOG.error("{}: a batch of {} messages of {} could not be settled; returned to the broker for"
          + " redelivery (what was applied is acked as a duplicate then), the worker resumes in {} ms",
          name, batch.size(), config.queue(), config.reconnectBackoff().toMillis(), e);
      unsettle(s);
      hold(config.reconnectBackoff());
    }
  }

  /**
   * Runs one message through the pipeline and settles it. Whatever escapes (an {@link Error} from a
   * listener or key extractor, which the pipeline does not catch) rolls back or recovers the
   * session so the broker redelivers the message, and the worker goes on after
   * {@link JmsConsumerConfig#reconnectBackoff()}; a {@link VirtualMachineError} is rethrown once
   * the session is rolled back, ending the worker.
   */
  private void process(Message message) {
    Session s = session;
    MessageProducer dlq = deadLetterProducer;
    if (s == null || dlq == null) {
      throw new IllegalStateException(name + " is not connected");
    }
    try {
      JmsInboundMessage inbound = read(message, s);
      if (inbound != null) {
        settle(inbound, message, s, dlq);
      }
    } catch (Throwable e) {
      if (e instanceof VirtualMachineError) {
        failed = true; // first: logging and rolling back may fail for want of memory
        try {
          LOG.error("{}: processing message {} of {} failed fatally; rolled back for redelivery, and"
              + " this worker stops", name, idOf(message), config.queue(), e);
          unsettle(s);
        } catch (Throwable secondary) {
          e.addSuppressed(secondary); // best effort: closing the connection rolls back as well
        }
        throw e;
      }
      LOG.error("{}: processing message {} of {} threw; returned to the broker for redelivery, the"
          + " worker resumes in {} ms", name, idOf(message), config.queue(),
          config.reconnectBackoff().toMillis(), e);
      unsettle(s);
      hold(config.reconnectBackoff());
    }
  }

  /** The message as an {@link JmsInboundMessage}, or {@code null} when it cannot be read (it is then returned). */
  private @Nullable JmsInboundMessage read(Message message, Session s) {
    try {
      return JmsInboundMessage.of(message, config.queue(), Instant.now())
          .withBrokerAttemptLimit(limits.limited() ? limits.maxDeliveryAttempts() : Integer.MAX_VALUE);
    } catch (JMSException | RuntimeException e) {
      LOG.error("{}: could not read message {} of {}; returning it to the broker, whose"
          + " max-delivery-attempts will move it to its dead-letter address: {}",
          name, idOf(message), config.queue(), e.toString());
      unsettle(s);
      return null;
    }
  }

  private void settle(JmsInboundMessage inbound, Message message, Session s, MessageProducer dlq) {
    try {
      while (true) {
        int attempt = inbound.deliveryAttempt();
        JmsAcknowledgement acknowledgement = new JmsAcknowledgement(s, config.sessionMode(), dlq,
            message, config.queue(),
            config.holdForRetryBackoff() ? delay -> holdForRetry(delay, attempt) : delay -> { },
            attempt, limits.limited() ? limits.maxDeliveryAttempts() : Integer.MAX_VALUE,
            pipeline.consumerGroup(), limits.source());
        pipeline.process(inbound, acknowledgement);
        if (acknowledgement.deadLetteredAtBrokerLimit()) {
          LOG.error("{}: message {} of {} dead-lettered on attempt {}: the broker's"
              + " max-delivery-attempts ({}) is below the pipeline's maxAttempts ({})", name,
              inbound.brokerMessageId(), config.queue(), attempt, limits.maxDeliveryAttempts(),
              pipeline.retryPolicy().maxAttempts());
        }
        if (acknowledgement.released()) {
          return; // handed back at shutdown; run() stops
        }
        Duration wait = acknowledgement.heldForStore();
        if (wait == null) {
          return;
        }
        // the store is down: keep the message in this session (a rollback would count toward the
        // broker's max-delivery-attempts) and run it again after the backoff
        holding = true;
        try {
          hold(wait);
        } finally {
          holding = false;
        }
        if (stopping || broken || Thread.currentThread().isInterrupted()) {
          LOG.info("{}: stopped waiting for the store; message {} of {} goes back to the broker",
              name, inbound.brokerMessageId(), config.queue());
          unsettle(s);
          return;
        }
      }
    } catch (RuntimeException e) {
      LOG.error("{}: message {} of {} could not be settled; left for redelivery: {}",
          name, inbound.brokerMessageId(), config.queue(), e.toString(), e);
      unsettle(s);
    }
  }

  private static @Nullable String idOf(Message message) {
    try {
      return message.getJMSMessageID();
    } catch (JMSException | RuntimeException e) {
      return null;
    }
  }

  /** Hands the current delivery back to the broker without acknowledging it. */
  private void unsettle(Session s) {
    try {
      if (config.sessionMode() == JmsSessionMode.TRANSACTED) {
        s.rollback();
      } else {
        s.recover();
      }
    } catch (JMSException e) {
      // closing the session returns the message just as well
      broken = true;
      LOG.warn("{}: rollback/recover failed, reconnecting: {}", name, e.toString());
    }
  }

  /**
   * Holds a failed message for the pipeline's backoff less the broker's own redelivery delay for
   * this delivery (so the two do not add up), before the rollback.
   */
  private void holdForRetry(Duration backoff, int attempt) {
    Duration wait = backoff.minus(limits.brokerDelayAfter(attempt));
    if (wait.isNegative() || wait.isZero()) {
      return;
    }
    holding = true;
    try {
      hold(wait);
    } finally {
      holding = false;
    }
  }

  private boolean pause() {
    hold(config.reconnectBackoff());
    return !stopping && !Thread.currentThread().isInterrupted();
  }

  /** Sleeps for {@code duration}, cut short by {@link #stop()} or an interrupt. */
  private void hold(Duration duration) {
    try {
      long until = System.nanoTime() + duration.toNanos();
      while (!stopping && System.nanoTime() < until) {
        TimeUnit.MILLISECONDS.sleep(Math.min(50, Math.max(1, (until - System.nanoTime()) / 1_000_000)));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Asks the worker to finish its current message and stop; returns at once. */
  void stop() {
    stopping = true;
  }

  /** Waits for the worker to stop. */
  boolean awaitStopped(long nanos) throws InterruptedException {
    return stopped.await(nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * Closes the connection from another thread, abandoning an in-flight message: its transaction
   * (or acknowledgement) never happens, so the broker redelivers it.
   */
  void abort() {
    stopping = true;
    disconnect();
  }

  private void disconnect() {
    Connection c = connection;
    connection = null;
    consumer = null;
    deadLetterProducer = null;
    session = null;
    if (c != null) {
      try {
        // closes the session: an open transaction rolls back, unacknowledged and prefetched
        // messages go back to the broker
        c.close();
      } catch (JMSException | RuntimeException e) {
        LOG.debug("{}: closing the connection failed: {}", name, e.toString());
      }
    }
  }
}
