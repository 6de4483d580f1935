package io.idem.spi;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Sends transactional-outbox rows to one kind of destination (a broker, an HTTP API), implemented
 * once per adapter ({@code KafkaOutboxPublisher}, {@code RabbitOutboxPublisher}, {@code
 * SqsOutboxPublisher}, {@code JmsOutboxPublisher}) and by applications for anything else.
 *
 * <p>Contract, which the relay relies on:
 *
 * <ul>
 *   <li>{@link #publish} returns only once the destination has <em>confirmed</em> the message
 *       (Kafka acks=all, a RabbitMQ publisher confirm, an SQS response, a JMS persistent send, an
 *       HTTP 2xx); the relay marks the row sent after it returns;
 *   <li>it throws when the message was not confirmed, or may not have been: the relay then retries
 *       the row later with backoff, so a publish may repeat; the copy must carry {@link
 *       OutboxMessage#idempotencyKey()} so that the consumer deduplicates a repeat;
 *   <li>throw {@link io.idem.NonRetryableException} when no retry can succeed (the row is parked at
 *       once, with the reason);
 *   <li>{@link #publishAll} sends a batch: every row's outcome is its own {@link
 *       OutboxPublishResult} (sent, failed with the cause, skipped); rows of one ordering key are
 *       sent in the list's order and the key stops at its first failure (its later rows are
 *       skipped, or, where the broker reports a refusal only after later rows went out, reported as
 *       they ended); what it throws means the destination could not be used at all (nothing in
 *       the batch is charged, the relay backs off);
 *   <li>it is called by one relay thread at a time per instance, but several relay instances may
 *       call several publisher instances at once: an implementation is thread-safe or
 *       used by one relay.
 * </ul>
 */
public interface OutboxPublisher extends AutoCloseable {

  /**
   * Sends {@code message} to {@link OutboxMessage#destination()} and waits for its confirmation.
   *
   * @throws Exception when it was not confirmed (timeout, refusal, unroutable, broken connection);
   *     the relay records its message as the row's last error
   */
  void publish(OutboxMessage message) throws Exception;

  /**
   * Sends a batch and waits for the confirmations, returning one result per message, in the
   * order of {@code messages} (same ids). A broker publisher overrides it to send every row before
   * waiting once (Kafka: the sends, then their acknowledgements; RabbitMQ: the publishes, then
   * the confirms).
   *
   * <p>The rules, which the relay relies on: rows with the same {@link
   * OutboxMessage#orderingKey()} are sent in list order, and the first of them that fails stops
   * the key — its later rows are {@link OutboxPublishResult.Status#SKIPPED skipped}, not sent (a
   * broker that refuses a row only after later rows of its key were accepted reports those as
   * they ended: sent when confirmed). Rows without an ordering key and rows of other keys go on.
   * A failure of one row is a {@link OutboxPublishResult.Status#FAILED failed} result with its
   * cause, classified by the relay (a row failure, or a destination outage charged to no row); a
   * throw from this method means the destination could not be used at all: the relay charges no
   * row of the batch, publishes it again, and backs off.
   *
   * <p>By default: {@link #publish} one row after the other, in list order, each failure
   * ({@link Throwable}, an {@link Error} included) that row's result; an interrupt ends the batch
   * (the row and the rest skipped, the thread's interrupt flag set again). The relay does not call
   * this default: it publishes such a publisher's rows one by one itself, so that it can end the
   * batch at a destination outage, at {@code close()} and when half of the lease has passed.
   *
   * @param messages the batch, in the relay's order (by id); not modified
   * @return one result per message, in the order of {@code messages}
   * @throws Exception when the destination could not be used at all (nothing charged)
   */
  default List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
    List<OutboxPublishResult> results = new ArrayList<>(messages.size());
    Set<String> stoppedKeys = new HashSet<>();
    boolean interrupted = false;
    for (OutboxMessage message : messages) {
      String orderingKey = message.orderingKey();
      if (interrupted || (orderingKey != null && stoppedKeys.contains(orderingKey))) {
        results.add(OutboxPublishResult.skipped(message));
        continue;
      }
      try {
        publish(message);
        results.add(OutboxPublishResult.sent(message));
      } catch (InterruptedException e) {
        interrupted = true;
        results.add(OutboxPublishResult.skipped(message));
      } catch (Throwable e) { // an Error of a serializer is this row's failure
        if (orderingKey != null) {
          stoppedKeys.add(orderingKey);
        }
        results.add(OutboxPublishResult.failed(message, e));
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return results;
  }

  /** Releases what the publisher holds (producers, channels); by default nothing. */
  @Override
  default void close() throws Exception {}
}
