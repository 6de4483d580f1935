package io.idem.jms;

import io.idem.BatchOrder;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One batch of a worker's session (see {@link JmsIdempotentConsumer}, "Batches"): the messages
 * run through {@link IdempotentConsumer#processBatch} with acknowledgements {@linkplain
 * JmsAcknowledgement#inBatch() in batch mode}, which only record what each message needs; the
 * ones to be run again (a handler failure's retry, a store outage, not started behind a retried
 * one) run again in the same session after the backoff, without a rollback; once none is left the
 * session is settled once — a commit, or an acknowledge — for the whole batch. Worker thread only.
 */
final class JmsBatch {
  private static final Logger LOG = LoggerFactory.getLogger(JmsIdempotentConsumer.class);

  /** What the batch needs of its worker. */
  interface Worker {
    /** Sleeps for {@code duration}, cut short by {@code stop()} or an interrupt. */
    void hold(Duration duration);

    /** Whether the worker must stop waiting: closing, its connection broken, or interrupted. */
    boolean mustStop();

    /** Rolls back (or recovers) the session: the broker has every message of it again. */
    void unsettle(Session session);

    /** Marks the worker as holding messages for a backoff or an outage (health view). */
    void holding(boolean on);
  }

  /** How a batch ended. */
  enum End {
    /** Settled: committed or acknowledged, or handed back after a failure. */
    DONE,
    /** Handed back at shutdown (close() interrupted it): the worker stops. */
    RELEASED,
    /** A message could not be read: rolled back; the worker takes the next ones one by one. */
    UNREADABLE
  }

  private record Item(Message message, JmsInboundMessage inbound) {}

  private final JmsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final JmsBrokerLimits limits;
  private final JmsDeliveryAttempts attempts;
  private final String name;
  private final Worker worker;

  JmsBatch(JmsConsumerConfig config, IdempotentConsumer<?> pipeline, JmsBrokerLimits limits,
      JmsDeliveryAttempts attempts, String name, Worker worker) {
    this.attempts = attempts;
    this.config = config;
    this.pipeline = pipeline;
    this.limits = limits;
    this.name = name;
    this.worker = worker;
  }

  /**
   * Processes and settles {@code received}, all of {@code session}, in receive order.
   *
   * @throws JMSException when the final commit or acknowledge failed (the broker redelivers the
   *     batch; the store acks what was applied as duplicates)
   * @throws RuntimeException what {@link IdempotentConsumer#processBatch} threw (an
   *     acknowledgement's dead-letter send failed); the session is left for the worker to roll back
   */
  End run(List<Message> received, Session session, MessageProducer deadLetters) throws JMSException {
    List<Item> pending = new ArrayList<>(received.size());
    int limit = limits.limited() ? limits.maxDeliveryAttempts() : Integer.MAX_VALUE;
    for (Message message : received) {
      try {
        JmsInboundMessage inbound = JmsInboundMessage.of(message, config.queue(), Instant.now())
            .withBrokerAttemptLimit(limit);
        // a flagged delivery makes the pipeline take the batch one by one (docs/FAILURES.md)
        pending.add(new Item(message, inbound.withAttempt(attempts.attempt(
            inbound.brokerMessageId(), inbound.brokerDeliveryCount(), message.getJMSRedelivered()))));
      } catch (JMSException | RuntimeException e) {
        LOG.error("{}: could not read a message of a batch of {} from {}; the batch is rolled back and its"
            + " messages taken one by one, so the broker's max-delivery-attempts moves that one alone: {}",
            name, received.size(), config.queue(), e.toString());
        worker.unsettle(session);
        return End.UNREADABLE;
      }
    }
    List<Item> all = List.copyOf(pending);
    BatchOrder order = config.concurrency() == 1 ? BatchOrder.ORDERED : BatchOrder.UNORDERED;
    boolean oneByOne = false; // after a handler failure: one run per attempt, not batch + redo
    while (true) {
      List<InboundMessage> messages = new ArrayList<>(pending.size());
      List<Acknowledgement> acknowledgements = new ArrayList<>(pending.size());
      List<JmsAcknowledgement> ours = new ArrayList<>(pending.size());
      for (Item item : pending) {
        JmsInboundMessage inbound = item.inbound();
        JmsAcknowledgement acknowledgement = new JmsAcknowledgement(session, config.sessionMode(), deadLetters,
            item.message(), config.queue(), delay -> { }, inbound.deliveryAttempt(), limit, pipeline.consumerGroup(),
            limits.source()).inBatch();
        if (inbound.countInflated()) {
          acknowledgement.countInflated(inbound.brokerDeliveryCount());
        }
        messages.add(item.inbound());
        acknowledgements.add(acknowledgement);
        ours.add(acknowledgement);
      }
      int started = oneByOne
          ? oneByOne(messages, acknowledgements, order)
          : pipeline.processBatch(messages, acknowledgements, order).stoppedAt();
      List<Item> again = new ArrayList<>();
      Duration wait = Duration.ZERO;
      for (int i = 0; i < pending.size(); i++) {
        Item item = pending.get(i);
        JmsAcknowledgement acknowledgement = ours.get(i);
        if (i >= started) {
          again.add(item); // not started, behind a retried one: no attempt
          continue;
        }
        if (acknowledgement.record().isReleased()) {
          // close() interrupted the batch: nothing of the session may be committed now, as the
          // released messages were not applied; the applied ones come back as duplicates
          worker.unsettle(session);
          return End.RELEASED;
        }
        if (acknowledgement.deadLetteredAtBrokerLimit()) {
          LOG.error("{}: message {} of {} dead-lettered on attempt {}: the broker's max-delivery-attempts"
              + " ({}) is below the pipeline's maxAttempts ({})", name, item.inbound().brokerMessageId(),
              config.queue(), item.inbound().deliveryAttempt(), limits.maxDeliveryAttempts(),
              pipeline.retryPolicy().maxAttempts());
        }
        Duration retry = acknowledgement.retryAfter();
        Duration store = acknowledgement.record().heldForStore();
        if (retry != null) {
          // a handler failure: run again in this session as this life's next attempt, no rollback
          again.add(new Item(item.message(), item.inbound().withDeliveryAttempt(item.inbound().inLifeAttempt() + 1)));
          wait = max(wait, retry);
        } else if (store != null) {
          // the store is down, or a transaction retry: the same delivery again, no longer flagged
          again.add(new Item(item.message(), item.inbound().withDeliveryAttempt(item.inbound().inLifeAttempt())));
          wait = max(wait, store);
        }
      }
      oneByOne = ours.stream().anyMatch(a -> a.retryAfter() != null);
      if (again.isEmpty()) {
        settle(session, received.get(received.size() - 1));
        for (Item settled : all) {
          attempts.forget(settled.inbound().brokerMessageId());
        }
        return End.DONE;
      }
      worker.holding(true);
      try {
        worker.hold(wait);
      } finally {
        worker.holding(false);
      }
      if (worker.mustStop()) {
        LOG.info("{}: stopped waiting to run {} message(s) of a batch of {} again; the whole batch goes"
            + " back to the broker, and what was applied is acked as a duplicate when it returns", name,
            again.size(), config.queue());
        worker.unsettle(session);
        return End.DONE;
      }
      pending = again;
    }
  }

  /**
   * Runs the messages one by one, as {@link IdempotentConsumer#processBatch} redoes a failed
   * batch, so that a message retried after a handler failure costs one handler run per attempt
   * (with a batch handler, another batch would run it once more in the batch and once in the
   * redo).
   *
   * @return how many were started: with {@link BatchOrder#ORDERED}, none behind a retry
   */
  private int oneByOne(List<InboundMessage> messages, List<Acknowledgement> acknowledgements, BatchOrder order) {
    for (int i = 0; i < messages.size(); i++) {
      ProcessingOutcome outcome = pipeline.process(messages.get(i), acknowledgements.get(i));
      if (order == BatchOrder.ORDERED && outcome.isRetry()) {
        return i + 1;
      }
    }
    return messages.size();
  }

  /** One commit, or one acknowledge (which covers every message the session delivered). */
  private void settle(Session session, Message last) throws JMSException {
    if (config.sessionMode() == JmsSessionMode.TRANSACTED) {
      session.commit();
    } else {
      last.acknowledge();
    }
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
