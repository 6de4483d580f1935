package io.idem.jms;

import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.spi.AdapterWorker;
import io.idem.spi.SettlementRecord;
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
  private final JmsDeliveryAttempts attempts;
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

  /**
   * @param attempts what the consumer's workers saw of their deliveries (shared by them)
   */
  JmsWorker(JmsConsumerConfig config, IdempotentConsumer<?> pipeline, String name, JmsBrokerLimits limits,
      JmsDeliveryAttempts attempts) {
    this.limits = limits;
    this.attempts = attempts;
    this.config = config;
    this.pipeline = pipeline;
    this.name = name;
    this.batches = new JmsBatch(config, pipeline, limits, attempts, name, new JmsBatch.Worker() {
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
          ProcessingOutcome outcome = batch.size() == 1 ? process(message) : null;
          if (batch.size() > 1) {
            processBatch(batch);
          }
          if (AdapterWorker.stopsAfter(stopping, outcome, () -> "message " + idOf(message) + " of "
              + config.queue(), LOG)) {
            break; // close() interrupted the handler: its message went back to the broker
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
    JmsBatch.End end = AdapterWorker.survive(
        () -> name + ": a batch of " + batch.size() + " messages of " + config.queue()
            + " (what was applied is acked as a duplicate when it comes back)",
        () -> batches.run(batch, s, dlq),
        () -> null, // a session settles all or nothing: whatever escapes returns the whole batch
        (failure, after) -> {
          unsettle(s);
          hold(after);
        },
        config.reconnectBackoff(), () -> failed = true, LOG);
    if (end == JmsBatch.End.UNREADABLE) {
      oneByOne = batch.size();
    }
  }

  /**
   * Runs one message through the pipeline and settles it, surviving whatever escapes ({@link
   * AdapterWorker#survive}): an unsettled message goes back to the broker by a rollback or recover
   * of the session and the worker goes on after {@link JmsConsumerConfig#reconnectBackoff()}; a
   * {@link VirtualMachineError} is rethrown once the session is rolled back, ending the worker.
   *
   * @return the last outcome, or {@code null} when the message could not be read or processing threw
   */
  private @Nullable ProcessingOutcome process(Message message) {
    Session s = session;
    MessageProducer dlq = deadLetterProducer;
    if (s == null || dlq == null) {
      throw new IllegalStateException(name + " is not connected");
    }
    SettlementRecord[] current = new SettlementRecord[1];
    return AdapterWorker.survive(
        () -> name + ": message " + idOf(message) + " of " + config.queue(),
        () -> {
          JmsInboundMessage inbound = read(message, s);
          return inbound == null ? null : settle(inbound, message, s, dlq, current);
        },
        () -> current[0],
        (failure, after) -> {
          unsettle(s);
          hold(after);
        },
        config.reconnectBackoff(), () -> failed = true, LOG);
  }

  /**
   * The message as an {@link JmsInboundMessage}, its attempt and {@linkplain
   * JmsInboundMessage#unaccountedRedelivery() flag} from what this consumer saw of it ({@link
   * JmsDeliveryAttempts}), or {@code null} when it cannot be read (it is then returned).
   */
  private @Nullable JmsInboundMessage read(Message message, Session s) {
    try {
      JmsInboundMessage inbound = JmsInboundMessage.of(message, config.queue(), Instant.now())
          .withBrokerAttemptLimit(limits.limited() ? limits.maxDeliveryAttempts() : Integer.MAX_VALUE);
      return inbound.withAttempt(attempts.attempt(
          inbound.brokerMessageId(), inbound.brokerDeliveryCount(), message.getJMSRedelivered()));
    } catch (JMSException | RuntimeException e) {
      LOG.error("{}: could not read message {} of {}; returning it to the broker, whose"
          + " max-delivery-attempts will move it to its dead-letter address: {}",
          name, idOf(message), config.queue(), e.toString());
      unsettle(s);
      return null;
    }
  }

  /**
   * Runs the message through the pipeline until it is settled, handed back or released: a delivery
   * held for the store stays in the session and runs again after the pipeline's delay — as the
   * same delivery of this life, no longer {@linkplain JmsInboundMessage#unaccountedRedelivery()
   * flagged} (its attempt was counted when it first ran, or it never reached the handler).
   */
  private @Nullable ProcessingOutcome settle(JmsInboundMessage first, Message message, Session s,
      MessageProducer dlq, SettlementRecord[] current) {
    JmsInboundMessage inbound = first;
    while (true) {
      int attempt = inbound.deliveryAttempt();
      int brokerCount = inbound.brokerDeliveryCount();
      String id = inbound.brokerMessageId();
      JmsAcknowledgement acknowledgement = new JmsAcknowledgement(s, config.sessionMode(), dlq,
          message, config.queue(),
          config.holdForRetryBackoff() ? delay -> holdForRetry(delay, brokerCount) : delay -> { },
          attempt, limits.limited() ? limits.maxDeliveryAttempts() : Integer.MAX_VALUE,
          pipeline.consumerGroup(), limits.source())
          .beforeRetry(() -> attempts.failed(id));
      if (inbound.countInflated()) {
        acknowledgement.countInflated(brokerCount);
      }
      current[0] = acknowledgement.record();
      ProcessingOutcome outcome = pipeline.process(inbound, acknowledgement);
      if (acknowledgement.record().isSettled()) {
        attempts.forget(id);
      }
      if (acknowledgement.deadLetteredAtBrokerLimit()) {
        LOG.error("{}: message {} of {} dead-lettered on attempt {}: the broker's"
            + " max-delivery-attempts ({}) is below the pipeline's maxAttempts ({})", name,
            inbound.brokerMessageId(), config.queue(), attempt, limits.maxDeliveryAttempts(),
            pipeline.retryPolicy().maxAttempts());
      }
      Duration again = acknowledgement.retryAfter();
      if (again != null) {
        // the broker's last delivery of a message whose count other messages' deaths raised: a
        // rollback would let the broker move it without a reason, so it runs again in this session
        LOG.info("{}: message {} of {} is on the broker's last delivery ({} of max-delivery-attempts {})"
            + " with a count raised by more than its own runs; retrying it in its session as attempt {}",
            name, id, config.queue(), brokerCount, limits.maxDeliveryAttempts(), inbound.inLifeAttempt() + 1);
        if (!holdInSession(again, s, id)) {
          return outcome;
        }
        inbound = inbound.withDeliveryAttempt(inbound.inLifeAttempt() + 1);
        continue;
      }
      Duration wait = acknowledgement.record().heldForStore();
      if (acknowledgement.record().isReleased() || wait == null) {
        return outcome; // settled, retried, or handed back at shutdown (run() then stops)
      }
      // the store is down: keep the message in this session (a rollback would count toward the
      // broker's max-delivery-attempts) and run it again after the backoff
      if (!holdInSession(wait, s, id)) {
        return outcome;
      }
      inbound = inbound.withDeliveryAttempt(inbound.inLifeAttempt());
    }
  }

  /**
   * Holds the current delivery in its session for {@code wait}; {@code false} when the worker
   * must stop instead (closing, connection broken, interrupted): the session is then rolled back
   * (or recovered), so the broker has the message again.
   */
  private boolean holdInSession(Duration wait, Session s, @Nullable String id) {
    holding = true;
    try {
      hold(wait);
    } finally {
      holding = false;
    }
    if (stopping || broken || Thread.currentThread().isInterrupted()) {
      LOG.info("{}: stopped waiting to run message {} of {} again; it goes back to the broker",
          name, id, config.queue());
      unsettle(s);
      return false;
    }
    return true;
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
