package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
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
 * {@code basic.nack} or no confirm within the timeout. One channel, opened on first use and again
 * after a failure; {@link #publish} is synchronized (a channel is one publisher's at a time). The
 * connection is the caller's: {@link #close()} closes only the channel.
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
      Map<String, Object> headers = new HashMap<>(message.headers());
      headers.put(OutboxMessage.KEY_HEADER, message.idempotencyKey());
      AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
          .deliveryMode(2).messageId(message.idempotencyKey()).headers(headers).build();
      ch.basicPublish(exchange, message.destination(), true, properties, message.payload());
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

  private Channel channel() throws IOException {
    if (channel == null || !channel.isOpen()) {
      Channel ch = connection.createChannel();
      ch.confirmSelect();
      ch.addReturnListener(r -> returned = r.getReplyCode() + " " + r.getReplyText()
          + " (exchange '" + r.getExchange() + "', routing key '" + r.getRoutingKey() + "')");
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
