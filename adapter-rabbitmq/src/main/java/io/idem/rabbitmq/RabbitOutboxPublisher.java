package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConfirmListener;
import com.rabbitmq.client.Connection;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox rows to RabbitMQ with publisher confirms: the row's destination is the routing
 * key on the publisher's exchange (the default exchange {@code ""}: the queue name), the message
 * persistent ({@code delivery_mode} 2), {@code mandatory}, with the idempotency key in the {@value
 * OutboxMessage#KEY_HEADER} header (where the next Idem consumer's default extractor finds it) and
 * as {@code message-id}.
 *
 * <p>{@link #publish} returns once the broker confirmed the message ({@code basic.ack}: stored on
 * a quorum queue's majority, or written for a durable classic queue). A message no queue took is
 * returned by the broker ({@code basic.return}, sent before its confirm) and is a failure, as is a
 * {@code basic.nack} or no confirm within the timeout. {@link #publishAll} publishes a whole batch
 * and waits for its confirms once. One channel, opened on first use and again after a failure;
 * {@link #publish} and {@link #publishAll} are synchronized (a channel is one publisher's at a
 * time). The connection is the caller's: {@link #close()} closes only the channel.
 *
 * <p>What the outbox relay makes of its failures: a lost or refused connection ({@code
 * AlreadyClosedException}/{@code ShutdownSignalException} of a connection-level shutdown, {@code
 * ConnectException}) and a confirm timeout are a destination outage, charged to no row; an
 * unroutable return, a nack or a channel-level refusal (404 on the exchange) is one failed attempt
 * of the row.
 */
public final class RabbitOutboxPublisher implements OutboxPublisher {
  /** Default wait for a publisher confirm: 30 s. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

  private final Connection connection;
  private final String exchange;
  private final Duration confirmTimeout;
  private @Nullable Channel channel;
  private volatile @Nullable String returned;
  /** The batch {@link #publishAll} is publishing, for the channel's listeners; null between. */
  private volatile @Nullable Batch batch;

  private RabbitOutboxPublisher(Connection connection, String exchange, Duration confirmTimeout) {
    this.connection = connection;
    this.exchange = exchange;
    this.confirmTimeout = confirmTimeout;
  }

  /**
   * A publisher on {@code connection} to {@code exchange} ({@code ""} for the default exchange,
   * where the destination is the queue name).
   *
   * @param confirmTimeout wait for each confirm, > 0 ({@link #DEFAULT_CONFIRM_TIMEOUT})
   */
  public static RabbitOutboxPublisher create(Connection connection, String exchange, Duration confirmTimeout) {
    Objects.requireNonNull(confirmTimeout, "confirmTimeout");
    if (confirmTimeout.isZero() || confirmTimeout.isNegative()) {
      throw new IllegalArgumentException("confirmTimeout must be > 0, but was " + confirmTimeout);
    }
    return new RabbitOutboxPublisher(Objects.requireNonNull(connection, "connection"),
        Objects.requireNonNull(exchange, "exchange"), confirmTimeout);
  }

  /** As {@link #create(Connection, String, Duration)} with {@link #DEFAULT_CONFIRM_TIMEOUT}. */
  public static RabbitOutboxPublisher create(Connection connection, String exchange) {
    return create(connection, exchange, DEFAULT_CONFIRM_TIMEOUT);
  }

  /**
   * Publishes and waits for the confirm.
   *
   * @throws IOException when the broker returned the message as unroutable, nacked it, or the
   *     channel failed
   * @throws TimeoutException when no confirm came within the timeout
   */
  @Override
  public synchronized void publish(OutboxMessage message) throws IOException, TimeoutException, InterruptedException {
    try {
      Channel ch = channel();
      returned = null;
      ch.basicPublish(exchange, message.destination(), true, properties(message), message.payload());
      if (!ch.waitForConfirms(confirmTimeout.toMillis())) {
        throw new IOException("the broker nacked outbox row " + message.id() + " to " + message.destination());
      }
      String unroutable = returned;
      if (unroutable != null) {
        throw new IOException("outbox row " + message.id() + " was returned as unroutable: " + unroutable);
      }
    } catch (IOException | TimeoutException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * Publishes every row of the batch on the channel, then waits once for the confirms (all within
   * one {@code confirmTimeout}); each row's outcome from its own confirm (a listener per sequence
   * number): sent on {@code basic.ack}; failed on {@code basic.nack} (a queue's {@code
   * reject-publish} overflow, an internal error) or when the broker returned it as unroutable
   * ({@code basic.return}, which comes before its ack); failed with the {@code TimeoutException}
   * or the channel's failure when no confirm came. RabbitMQ reports a refusal only after the
   * later rows of the batch were published: a row of an ordering key that fails does not hold the
   * key's later rows of this batch (they are reported as they ended, sent when confirmed); the
   * key's later failures are reported skipped (uncharged). A channel that broke while publishing
   * leaves the rows not published yet skipped.
   *
   * @throws IOException when no channel could be opened (the connection is gone): nothing of the
   *     batch was published
   * @throws InterruptedException when interrupted while waiting for the confirms
   */
  @Override
  public synchronized List<OutboxPublishResult> publishAll(List<OutboxMessage> messages)
      throws IOException, InterruptedException {
    if (messages.isEmpty()) {
      return List.of();
    }
    Channel ch;
    try {
      ch = channel();
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
    Batch batch = new Batch();
    this.batch = batch;
    long[] sequence = new long[messages.size()];
    Throwable channelFailure = null;
    int published = 0;
    try {
      for (OutboxMessage message : messages) {
        long seq = ch.getNextPublishSeqNo();
        batch.pending.add(seq);
        try {
          ch.basicPublish(exchange, message.destination(), true, properties(message), message.payload());
        } catch (IOException | RuntimeException e) {
          batch.pending.remove(seq);
          channelFailure = e;
          break;
        }
        sequence[published++] = seq;
      }
      if (published > 0 && channelFailure == null) {
        try {
          ch.waitForConfirms(confirmTimeout.toMillis());
        } catch (TimeoutException e) {
          channelFailure = new TimeoutException("no publisher confirm for " + batch.pending.size()
              + " of " + published + " outbox rows within " + confirmTimeout);
        } catch (RuntimeException e) { // the channel or connection closed while waiting
          channelFailure = e;
        }
      }
    } finally {
      this.batch = null;
    }
    if (channelFailure != null) {
      close();
    }
    List<OutboxPublishResult> results = new ArrayList<>(messages.size());
    Set<String> failedKeys = new HashSet<>();
    for (int i = 0; i < messages.size(); i++) {
      OutboxMessage message = messages.get(i);
      Throwable failure;
      if (i >= published) {
        failure = i == published && channelFailure != null ? channelFailure : null;
        if (failure == null) {
          results.add(OutboxPublishResult.skipped(message));
          continue;
        }
      } else {
        String unroutable = batch.returned.get(returnKey(message.destination(), message.idempotencyKey()));
        Boolean acked = batch.outcomes.get(sequence[i]);
        if (unroutable != null) {
          failure = new IOException("outbox row " + message.id() + " was returned as unroutable: " + unroutable);
        } else if (Boolean.TRUE.equals(acked)) {
          results.add(OutboxPublishResult.sent(message));
          continue;
        } else if (Boolean.FALSE.equals(acked)) {
          failure = new IOException("the broker nacked outbox row " + message.id() + " to " + message.destination());
        } else {
          failure = channelFailure != null ? channelFailure
              : new IOException("no publisher confirm for outbox row " + message.id());
        }
      }
      String orderingKey = message.orderingKey();
      if (orderingKey != null && !failedKeys.add(orderingKey)) {
        results.add(OutboxPublishResult.skipped(message)); // behind its key's first failure
      } else {
        results.add(OutboxPublishResult.failed(message, failure));
      }
    }
    return results;
  }

  private static AMQP.BasicProperties properties(OutboxMessage message) {
    Map<String, Object> headers = new HashMap<>(message.headers());
    headers.put(OutboxMessage.KEY_HEADER, message.idempotencyKey());
    return new AMQP.BasicProperties.Builder()
        .deliveryMode(2).messageId(message.idempotencyKey()).headers(headers).build();
  }

  private static String returnKey(String routingKey, @Nullable String messageId) {
    return routingKey + '\u0000' + messageId;
  }

  /**
   * The confirms and returns of the batch being published: written by the connection's thread
   * (the listeners), read by the publishing thread after {@code waitForConfirms}.
   */
  private static final class Batch {
    /** Sequence numbers published and not confirmed yet. */
    final ConcurrentSkipListSet<Long> pending = new ConcurrentSkipListSet<>();
    /** Sequence number to true (acked) or false (nacked). */
    final Map<Long, Boolean> outcomes = new ConcurrentHashMap<>();
    /** routing key + message id of a returned message to the broker's reason. */
    final Map<String, String> returned = new ConcurrentHashMap<>();

    void settle(long tag, boolean multiple, boolean ack) {
      if (multiple) {
        for (Long seq : pending.headSet(tag, true)) {
          outcomes.putIfAbsent(seq, ack);
          pending.remove(seq);
        }
      } else {
        outcomes.putIfAbsent(tag, ack);
        pending.remove(tag);
      }
    }
  }

  private Channel channel() throws IOException {
    if (channel == null || !channel.isOpen()) {
      Channel ch = connection.createChannel();
      ch.confirmSelect();
      ch.addReturnListener(r -> {
        String reason = r.getReplyCode() + " " + r.getReplyText()
            + " (exchange '" + r.getExchange() + "', routing key '" + r.getRoutingKey() + "')";
        returned = reason;
        Batch b = batch;
        if (b != null) {
          b.returned.put(returnKey(r.getRoutingKey(), r.getProperties().getMessageId()), reason);
        }
      });
      ch.addConfirmListener(new ConfirmListener() {
        @Override
        public void handleAck(long deliveryTag, boolean multiple) {
          Batch b = batch;
          if (b != null) {
            b.settle(deliveryTag, multiple, true);
          }
        }

        @Override
        public void handleNack(long deliveryTag, boolean multiple) {
          Batch b = batch;
          if (b != null) {
            b.settle(deliveryTag, multiple, false);
          }
        }
      });
      channel = ch;
    }
    return channel;
  }

  /** Closes the channel (a later publish opens a new one); the connection stays open. */
  @Override
  public synchronized void close() {
    Channel ch = channel;
    channel = null;
    if (ch != null && ch.isOpen()) {
      try {
        ch.close();
      } catch (IOException | TimeoutException | RuntimeException ignored) {
        // the channel is broken already
      }
    }
  }
}
