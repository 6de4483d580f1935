package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import io.idem.IdempotencyException;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Declares or verifies the queue and its dead-letter exchange, as {@link RabbitConsumerConfig}
 * describes. Each step runs on a throw-away channel, because RabbitMQ answers a refused
 * declaration by closing the channel.
 */
final class Topology {
  private static final int NOT_FOUND = 404;
  private static final int PRECONDITION_FAILED = 406;
  private static final String DELIVERY_LIMIT = "x-delivery-limit";
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RabbitIdempotentConsumer.class);

  private Topology() {}

  @FunctionalInterface
  private interface Step {
    void run(Channel channel) throws IOException;
  }

  /** A refused step: the broker's reply code and text. */
  private record Refusal(int code, String text) {}

  static void prepare(Connection connection, RabbitConsumerConfig config) {
    String queue = config.queue();
    String dlx = config.deadLetterExchange();
    Map<String, Object> args = config.queueArguments();
    if (config.declareTopology()) {
      Map<String, Object> dlqArgs = deadLetterQueueArguments(config, connection);
      refuseOn(connection, ch -> ch.exchangeDeclare(dlx, BuiltinExchangeType.FANOUT, true),
          r -> "could not declare dead-letter exchange '" + dlx + "' (fanout, durable): " + r.text);
      Refusal dlqRefusal = attempt(connection,
          ch -> ch.queueDeclare(config.deadLetterQueue(), true, false, false, dlqArgs));
      if (dlqRefusal != null && dlqArgs.containsKey(DELIVERY_LIMIT) && dlqRefusal.code == PRECONDITION_FAILED
          && dlqRefusal.text.contains(DELIVERY_LIMIT)) {
        // declared by an earlier version, without the unlimited delivery limit: keep it as it is
        LOG.warn("dead-letter queue '{}' exists without x-delivery-limit=-1: RabbitMQ {} limits a quorum"
            + " queue's deliveries to 20 by default, so browsing or replaying its dead letters (docs/DEAD-LETTERS.md)"
            + " returns each at most that often before RabbitMQ drops it. Re-create the queue with"
            + " x-delivery-limit=-1 (a queue's arguments cannot change)", config.deadLetterQueue(),
            serverVersion(connection));
        dlqRefusal = attempt(connection, ch -> ch.queueDeclarePassive(config.deadLetterQueue()));
      }
      if (dlqRefusal != null) {
        throw new IdempotencyException(
            "could not declare dead-letter queue '" + config.deadLetterQueue() + "': " + dlqRefusal.text);
      }
      refuseOn(connection, ch -> ch.queueBind(config.deadLetterQueue(), dlx, ""),
          r -> "could not bind '" + config.deadLetterQueue() + "' to '" + dlx + "': " + r.text);
      refuseOn(connection, ch -> ch.queueDeclare(queue, true, false, false, args),
          r -> explainArguments(connection, config, r));
      return;
    }
    refuseOn(connection, ch -> ch.queueDeclarePassive(queue),
        r -> r.code == NOT_FOUND
            ? "queue '" + queue + "' does not exist: declare it with arguments " + args
                + ", or set declareTopology(true)"
            : "could not check queue '" + queue + "': " + r.text);
    refuseOn(connection, ch -> ch.exchangeDeclarePassive(dlx),
        r -> r.code == NOT_FOUND
            ? "dead-letter exchange '" + dlx + "' of queue '" + queue + "' does not exist: declare it"
                + " (and bind a dead-letter queue to it), or set declareTopology(true)"
            : "could not check exchange '" + dlx + "': " + r.text);
    if (config.verifyQueueArguments()) {
      refuseOn(connection, ch -> ch.queueDeclare(queue, true, false, false, args),
          r -> explainArguments(connection, config, r));
    }
  }

  /**
   * The dead-letter queue's arguments: its type, and on a quorum queue of RabbitMQ 4.0+ an
   * unlimited delivery limit ({@code x-delivery-limit=-1}). RabbitMQ 4.0 gives every quorum queue a
   * default limit of 20 deliveries, and a dead letter returned that often (each time an operator
   * lists the queue with {@code basic.get} and returns the messages, or a replay leaves one) would be
   * dropped — a dead-letter queue has no dead-letter exchange of its own. RabbitMQ 3.x has no
   * default limit and reads a negative one as 0 (drop at the first return), so nothing is added
   * there.
   */
  static Map<String, Object> deadLetterQueueArguments(RabbitConsumerConfig config, Connection connection) {
    Map<String, Object> args = new LinkedHashMap<>();
    args.put("x-queue-type", config.queueType().argument());
    if (config.queueType() == RabbitQueueType.QUORUM && majorVersion(serverVersion(connection)) >= 4) {
      args.put(DELIVERY_LIMIT, -1);
    }
    return args;
  }

  private static String serverVersion(Connection connection) {
    Object version = connection.getServerProperties() == null ? null : connection.getServerProperties().get("version");
    return version == null ? "" : version.toString();
  }

  /** The major version of a RabbitMQ version string ({@code 4.0.5}), or 0 when unknown. */
  static int majorVersion(String version) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)\\.").matcher(version);
    return m.find() ? Integer.parseInt(m.group(1)) : 0;
  }

  private static String explainArguments(Connection connection, RabbitConsumerConfig config, Refusal r) {
    String queue = config.queue();
    if (r.code != PRECONDITION_FAILED) {
      return "could not declare queue '" + queue + "': " + r.text;
    }
    if (r.text.contains("'x-dead-letter-exchange'") && r.text.contains("current is none")) {
      Map<String, Object> withoutDlx = new LinkedHashMap<>(config.queueArguments());
      withoutDlx.remove("x-dead-letter-exchange");
      withoutDlx.remove("x-dead-letter-routing-key");
      boolean otherwiseEqual =
          attempt(connection, ch -> ch.queueDeclare(queue, true, false, false, withoutDlx)) == null;
      String fix = " Refusing to start: re-create the queue with x-dead-letter-exchange='"
          + config.deadLetterExchange() + "' (a queue's arguments cannot change), or set it with a"
          + " policy and verifyQueueArguments(false).";
      if (otherwiseEqual && config.queueType() == RabbitQueueType.QUORUM && config.deliveryLimit() != null) {
        return "quorum queue '" + queue + "' has x-delivery-limit=" + config.deliveryLimit()
            + " but no dead-letter exchange: RabbitMQ would drop every message returned more than "
            + config.deliveryLimit() + " times." + fix;
      }
      return "queue '" + queue + "' has no dead-letter exchange (x-dead-letter-exchange): whatever"
          + " RabbitMQ dead-letters from it (a quorum queue's delivery limit, TTL, length limit) would"
          + " be dropped." + fix;
    }
    return "queue '" + queue + "' exists with other arguments than configured " + config.queueArguments()
        + ": " + r.text + ". Configure its actual arguments (queueType, deliveryLimit,"
        + " deadLetterExchange, deadLetterRoutingKey, queueArgument) or re-create it.";
  }

  private static void refuseOn(
      Connection connection, Step step, java.util.function.Function<Refusal, String> explain) {
    Refusal refusal = attempt(connection, step);
    if (refusal != null) {
      throw new IdempotencyException(explain.apply(refusal));
    }
  }

  private static @Nullable Refusal attempt(Connection connection, Step step) {
    Channel channel;
    try {
      channel = connection.createChannel();
    } catch (IOException e) {
      throw new IdempotencyException("could not open a channel on " + connection + ": " + e, e);
    }
    if (channel == null) {
      throw new IdempotencyException("no channel available on " + connection);
    }
    try {
      step.run(channel);
      return null;
    } catch (IOException e) {
      Refusal refusal = refusal(e);
      if (refusal == null) {
        throw new IdempotencyException("RabbitMQ did not answer a declaration: " + e, e);
      }
      return refusal;
    } finally {
      try {
        if (channel.isOpen()) {
          channel.close();
        }
      } catch (Exception ignored) {
        // the channel is gone either way
      }
    }
  }

  private static @Nullable Refusal refusal(IOException e) {
    if (e.getCause() instanceof ShutdownSignalException signal
        && signal.getReason() instanceof AMQP.Channel.Close close) {
      return new Refusal(close.getReplyCode(), close.getReplyText());
    }
    return null;
  }
}
