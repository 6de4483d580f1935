package io.idem.jms;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.spi.Acknowledgement;
import io.idem.spi.SettlementRecord;
import jakarta.jms.BytesMessage;
import jakarta.jms.DeliveryMode;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.time.Duration;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles one JMS delivery on the session that received it, by {@link JmsSessionMode}:
 *
 * <table>
 *   <caption>What each call does</caption>
 *   <tr><th></th><th>{@code TRANSACTED}</th><th>{@code CLIENT_ACKNOWLEDGE}</th></tr>
 *   <tr><td>{@link #ack()}</td><td>{@code session.commit()}</td><td>{@code message.acknowledge()}</td></tr>
 *   <tr><td>{@link #retry(Duration)}</td><td>{@code session.rollback()}</td><td>{@code session.recover()}</td></tr>
 *   <tr><td>{@link #retryWhenStoreAvailable(Duration)}</td>
 *       <td colspan="2">nothing: the message stays in the open transaction (unacknowledged) and
 *       the worker runs it through the pipeline again after {@code delay}</td></tr>
 *   <tr><td>{@link #release()}</td><td>{@code session.rollback()}</td><td>{@code session.recover()}</td></tr>
 *   <tr><td>{@link #deadLetter(DeadLetterReason)}</td>
 *       <td>send the copy, then {@code commit()}: one JMS transaction, atomic</td>
 *       <td>persistent send of the copy, then {@code acknowledge()}</td></tr>
 * </table>
 *
 * <p>Retry delay: the JMS API has no per-message redelivery delay. With {@link
 * JmsConsumerConfig#holdForRetryBackoff()} (the default) the message is held for {@code delay}
 * (less the broker's own redelivery delay, where known) before the rollback, so it comes back no
 * sooner than {@code delay} on any provider; without it the broker's redelivery setting alone
 * spaces the redeliveries (ActiveMQ Artemis: {@code redelivery-delay}, default 0).
 *
 * <p>Broker limit: when this delivery is the broker's last ({@code JMSXDeliveryCount} has reached
 * the broker's {@code max-delivery-attempts}, read or declared at start) a rollback would let the
 * broker move the message without a reason, or drop it. {@link #retry(Duration)} then dead-letters
 * it instead, with cause {@code MAX_ATTEMPTS_EXCEEDED} and a detail naming the broker's limit, so
 * Idem dead-letters at the lower of its {@code maxAttempts} and the broker's limit. That copy
 * carries no key and no exception class (the pipeline does not hand them to {@code retry}; the
 * original's properties, the key property among them, are on the copy), and the pipeline reports
 * the outcome as {@code RETRY} to its listeners. A delivery whose count is {@linkplain
 * #countInflated inflated} (raised by other messages' process deaths) is not charged with them: on
 * the broker's last delivery {@link #retry(Duration)} leaves it in the session, and the worker
 * runs it again after the backoff as the next attempt.
 *
 * <p>Store outages: a rollback or {@code recover()} raises {@code JMSXDeliveryCount}, and the
 * broker moves the message to its dead-letter address after {@code max-delivery-attempts}, so a
 * long database outage would dead-letter good messages. {@link #retryWhenStoreAvailable(Duration)}
 * therefore keeps the delivery: the worker waits for {@code delay} (cut short by
 * {@link JmsIdempotentConsumer#close()}, which then rolls back or recovers so the broker has the
 * message again) and processes it again on the same session, with the same delivery count.
 *
 * <p>Shutdown: {@link #release()} (the consumer is closing and interrupted the handler) hands the
 * message back at once on the worker's own session, with the thread's interrupt flag cleared for
 * the call and set again, and the worker stops. JMS has no way to return a message without
 * raising {@code JMSXDeliveryCount} (a rollback, a recover and a closing session all count), so
 * the next delivery is one more, as after a crash; the pipeline counts no attempt and
 * dead-letters nothing for it.
 *
 * <p>The dead-letter copy keeps the body type ({@code BytesMessage} and {@code TextMessage} are
 * rebuilt; other types are re-sent as the received object with its properties rewritten),
 * every property except the provider-set {@code JMSX*}/{@code JMS_*} ones,
 * {@code JMSCorrelationID}, {@code JMSType} and priority, never expires, and adds
 * {@link DeadLetterReason#toHeaders()}, {@link #HEADER_ORIGINAL_MESSAGE_ID} and
 * {@link #HEADER_ORIGINAL_QUEUE}, each under its {@link JmsHeaderNames#toPropertyName JMS
 * property name} ({@code idem_dead_letter_cause}, …); on Artemis in CLIENT_ACKNOWLEDGE mode also
 * {@link #ARTEMIS_DUPLICATE_ID}.
 *
 * <p>Not thread-safe: used once, on the worker thread that owns the session. A method that throws
 * {@link IdempotencyException} left the message unsettled; the worker then rolls back (or
 * recovers) the session so the broker redelivers it.
 */
public final class JmsAcknowledgement implements Acknowledgement {
  private static final Logger LOG = LoggerFactory.getLogger(JmsAcknowledgement.class);

  /** Header on dead-letter copies: the original {@code JMSMessageID}: {@value}. */
  public static final String HEADER_ORIGINAL_MESSAGE_ID = "idem-original-message-id";
  /** Header on dead-letter copies: the queue the original was consumed from: {@value}. */
  public static final String HEADER_ORIGINAL_QUEUE = "idem-original-queue";

  /**
   * Artemis' duplicate-detection property ({@code Message.HDR_DUPLICATE_DETECTION_ID}): {@value}.
   * Set to the original's {@code JMSMessageID} on a CLIENT_ACKNOWLEDGE copy sent through Artemis'
   * client (unless the original carried one, which the copy keeps), so that the copy stored again
   * after a crash between the send and {@code acknowledge()} is dropped by the broker.
   */
  static final String ARTEMIS_DUPLICATE_ID = "_AMQ_DUPL_ID";
  private static final String ARTEMIS_PACKAGE = "org.apache.activemq.artemis.";

  private final Session session;
  private final JmsSessionMode mode;
  private final MessageProducer deadLetterProducer;
  private final Message message;
  private final String queue;
  private final Consumer<Duration> hold;
  private final int attempt;
  private final int brokerLimit;
  private final String consumerGroup;
  private final String limitSource;
  private boolean settled;
  private boolean inBatch;
  private @Nullable Duration retryAfter;
  private boolean deadLetteredAtBrokerLimit;
  private Runnable beforeRetry = () -> { };
  private boolean inflated;
  private int brokerCount;
  private final SettlementRecord record = new SettlementRecord();

  /**
   * @param hold waits before a retry's rollback (the worker's interruptible hold), or does
   *     nothing when {@link JmsConsumerConfig#holdForRetryBackoff()} is off
   * @param attempt this delivery's {@code JMSXDeliveryCount}
   * @param brokerLimit the broker's {@code max-delivery-attempts}, {@link Integer#MAX_VALUE} for none
   * @param limitSource where {@code brokerLimit} was read, for the dead-letter detail
   */
  JmsAcknowledgement(
      Session session,
      JmsSessionMode mode,
      MessageProducer deadLetterProducer,
      Message message,
      String queue,
      Consumer<Duration> hold,
      int attempt,
      int brokerLimit,
      String consumerGroup,
      String limitSource) {
    this.hold = hold;
    this.attempt = attempt;
    this.brokerCount = attempt;
    this.brokerLimit = brokerLimit;
    this.consumerGroup = consumerGroup;
    this.limitSource = limitSource;
    this.session = session;
    this.mode = mode;
    this.deadLetterProducer = deadLetterProducer;
    this.message = message;
    this.queue = queue;
  }

  /**
   * Puts this acknowledgement in batch mode (see {@link JmsIdempotentConsumer}, "Batches"): it
   * decides and records, and the worker settles the session once for the whole batch. {@link
   * #ack()} does nothing more; {@link #deadLetter} sends the copy (in the session's transaction
   * when transacted) without committing or acknowledging; {@link #retry(Duration)} neither holds
   * nor rolls back but records the backoff ({@link #retryAfter()}); {@link #release()} only records.
   */
  JmsAcknowledgement inBatch() {
    this.inBatch = true;
    return this;
  }

  /**
   * Runs {@code action} in {@link #retry(Duration)} just before the rollback (or recover) that
   * hands the failed delivery back, so that the worker remembers it failed before any worker can
   * receive the redelivery ({@link JmsDeliveryAttempts#failed}). Not run in batch mode nor when the
   * delivery is dead-lettered at the broker's limit.
   */
  JmsAcknowledgement beforeRetry(Runnable action) {
    this.beforeRetry = java.util.Objects.requireNonNull(action, "action");
    return this;
  }

  /**
   * Marks the delivery's {@code JMSXDeliveryCount} as raised by more than its own handler runs
   * ({@link JmsInboundMessage#countInflated()}: an unaccounted redelivery, whose count the
   * deaths of messages prefetched with it raised too, or one whose count is above this life's
   * attempt). On the broker's last delivery such a delivery is not dead-lettered at the broker's
   * limit: {@link #retry(Duration)} keeps it in the session instead ({@link #retryAfter()}), so
   * the broker never moves it and the pipeline's {@code maxAttempts} decides.
   *
   * @param count the delivery's {@code JMSXDeliveryCount}
   */
  JmsAcknowledgement countInflated(int count) {
    this.inflated = true;
    this.brokerCount = count;
    return this;
  }

  /**
   * The backoff {@link #retry(Duration)} asked for when it left the message in the session (batch
   * mode; an {@linkplain #countInflated inflated} delivery on the broker's last delivery): the
   * worker runs it again after the backoff, as the next attempt; else {@code null}.
   */
  @Nullable Duration retryAfter() {
    return retryAfter;
  }

  /**
   * @throws IdempotencyException when the commit or acknowledgement failed (the message will be
   *     redelivered and found to be a duplicate)
   */
  @Override
  public void ack() {
    settleOnce();
    if (inBatch) {
      return;
    }
    try {
      if (mode == JmsSessionMode.TRANSACTED) {
        session.commit();
      } else {
        message.acknowledge();
      }
      record.markSettled();
    } catch (JMSException e) {
      throw new IdempotencyException("could not " + (mode == JmsSessionMode.TRANSACTED
          ? "commit the JMS session" : "acknowledge") + " for a message of " + queue
          + "; it will be redelivered and skipped as a duplicate: " + e, e);
    }
  }

  /**
   * Rolls back (or recovers) the session after holding the message for {@code delay} (see the
   * class description); on the broker's last delivery dead-letters it instead, or — when its
   * count is {@linkplain #countInflated inflated} — leaves it in the session for the worker to
   * run again ({@link #retryAfter()}).
   *
   * @param delay the pipeline's backoff; held before the rollback only with
   *     {@link JmsConsumerConfig#holdForRetryBackoff()}
   * @throws IdempotencyException when the rollback or recover (or the dead-letter move) failed
   */
  @Override
  public void retry(Duration delay) {
    settleOnce();
    boolean lastDelivery = Math.max(attempt, brokerCount) >= brokerLimit;
    if (lastDelivery && !inflated) {
      deadLetteredAtBrokerLimit = true;
      moveToDeadLetterQueue(new DeadLetterReason(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED,
          "handler failed on attempt " + attempt + ", the broker's last delivery: its"
              + " max-delivery-attempts is " + brokerLimit + " (" + limitSource + "), below the"
              + " pipeline's RetryPolicy.maxAttempts, so Idem dead-letters now rather than let the"
              + " broker move or drop the message without a reason (the failure is in the"
              + " pipeline's WARN log line for this attempt)",
          consumerGroup, null, attempt, null));
      return;
    }
    LOG.debug("retry of a message of {} requested with a {} ms backoff", queue, delay.toMillis());
    if (inBatch || lastDelivery) {
      // batch mode, or a count raised by other messages' deaths: a rollback would let the broker
      // move it without a reason, so it is run again in this session, where the count stays
      retryAfter = java.util.Objects.requireNonNull(delay, "delay");
      return;
    }
    hold.accept(delay);
    beforeRetry.run();
    try {
      if (mode == JmsSessionMode.TRANSACTED) {
        session.rollback();
      } else {
        session.recover();
      }
    } catch (JMSException e) {
      throw new IdempotencyException("could not " + (mode == JmsSessionMode.TRANSACTED
          ? "roll back the JMS session" : "recover the JMS session") + " on " + queue + ": " + e, e);
    }
  }

  /**
   * Leaves the message unsettled in the session (no rollback, no recover); the worker runs it again
   * after {@code delay}. See the class description.
   */
  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    settleOnce();
    record.markHeldForStore(delay);
  }

  /**
   * Rolls back (or recovers) the session at once; see the class description.
   *
   * @throws IdempotencyException when the rollback or recover failed (closing the connection
   *     returns the message then)
   */
  @Override
  public void release() {
    settleOnce();
    record.markReleased();
    if (inBatch) {
      return;
    }
    boolean interrupted = Thread.interrupted(); // the client may refuse a blocking call otherwise
    try {
      if (mode == JmsSessionMode.TRANSACTED) {
        session.rollback();
      } else {
        session.recover();
      }
    } catch (JMSException e) {
      throw new IdempotencyException("could not hand back a message of " + queue + " at shutdown ("
          + (mode == JmsSessionMode.TRANSACTED ? "rollback" : "recover") + "): " + e, e);
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Whether {@link #retry(Duration)} dead-lettered because this was the broker's last delivery. */
  boolean deadLetteredAtBrokerLimit() {
    return deadLetteredAtBrokerLimit;
  }

  /**
   * What this delivery's settlement left for the worker: settled (committed or acknowledged, the
   * dead-letter copy with it), released at shutdown, or held for the store with the delay.
   */
  SettlementRecord record() {
    return record;
  }

  /**
   * Sends the copy with the reason to the dead-letter queue, then removes the original.
   *
   * @throws IdempotencyException when the copy could not be sent or the removal failed; the
   *     original then stays on its queue
   */
  @Override
  public void deadLetter(DeadLetterReason reason) {
    settleOnce();
    moveToDeadLetterQueue(reason);
  }

  private void moveToDeadLetterQueue(DeadLetterReason reason) {
    try {
      Message copy = copyOf(reason);
      deadLetterProducer.send(copy, DeliveryMode.PERSISTENT, priority(), Message.DEFAULT_TIME_TO_LIVE);
    } catch (JMSException | RuntimeException e) {
      throw new IdempotencyException("could not send the dead-letter copy of a message of " + queue
          + " (" + reason + "); the original stays and will be redelivered: " + e, e);
    }
    if (inBatch) {
      return;
    }
    try {
      if (mode == JmsSessionMode.TRANSACTED) {
        session.commit();
      } else {
        message.acknowledge();
      }
      record.markSettled();
    } catch (JMSException e) {
      throw new IdempotencyException("could not " + (mode == JmsSessionMode.TRANSACTED
          ? "commit the dead-letter move" : "acknowledge the dead-lettered original")
          + " for a message of " + queue + ": " + e, e);
    }
  }

  private void settleOnce() {
    if (settled) {
      throw new IllegalStateException("this delivery of " + queue + " was already settled");
    }
    settled = true;
  }

  private int priority() throws JMSException {
    int p = message.getJMSPriority();
    return p < 0 || p > 9 ? Message.DEFAULT_PRIORITY : p;
  }

  private Message copyOf(DeadLetterReason reason) throws JMSException {
    Map<String, Object> properties = new LinkedHashMap<>();
    for (Enumeration<?> names = message.getPropertyNames(); names.hasMoreElements(); ) {
      String name = (String) names.nextElement();
      if (!name.startsWith("JMSX") && !name.startsWith("JMS_")) {
        Object value = message.getObjectProperty(name);
        if (value != null) {
          properties.put(name, value);
        }
      }
    }
    Message copy;
    if (message instanceof BytesMessage bytes) {
      BytesMessage b = session.createBytesMessage();
      byte[] body = bytes.getBody(byte[].class);
      if (body != null) {
        b.writeBytes(body);
      }
      copy = b;
    } else if (message instanceof TextMessage text) {
      copy = session.createTextMessage(text.getText());
    } else {
      // Map, Stream, Object or body-less: JMS lets a received message be sent again as it is;
      // its properties are read-only until cleared.
      copy = message;
      copy.clearProperties();
    }
    for (Map.Entry<String, Object> p : properties.entrySet()) {
      copy.setObjectProperty(p.getKey(), p.getValue());
    }
    if (copy != message) {
      copy.setJMSCorrelationID(message.getJMSCorrelationID());
      copy.setJMSType(message.getJMSType());
    }
    for (Map.Entry<String, String> h : reason.toHeaders().entrySet()) {
      copy.setStringProperty(JmsHeaderNames.toPropertyName(h.getKey()), h.getValue());
    }
    String originalId = message.getJMSMessageID();
    if (originalId != null) {
      copy.setStringProperty(JmsHeaderNames.toPropertyName(HEADER_ORIGINAL_MESSAGE_ID), originalId);
    }
    copy.setStringProperty(JmsHeaderNames.toPropertyName(HEADER_ORIGINAL_QUEUE), queue);
    if (mode == JmsSessionMode.CLIENT_ACKNOWLEDGE && originalId != null
        && copy.getClass().getName().startsWith(ARTEMIS_PACKAGE)
        && !copy.propertyExists(ARTEMIS_DUPLICATE_ID)) {
      // a copy sent again after a crash before acknowledge() is dropped by Artemis' duplicate
      // detection (docs/FAILURES.md, "Dead-lettering twice"); transacted sends need none (atomic)
      copy.setStringProperty(ARTEMIS_DUPLICATE_ID, originalId);
    }
    return copy;
  }
}
