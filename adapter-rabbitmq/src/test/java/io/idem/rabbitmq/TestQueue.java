package io.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A uniquely named queue with its dead-letter exchange ({@code <name>.dlx}, fanout) and
 * dead-letter queue ({@code <name>.dlq}) on the fixture's RabbitMQ, declared by the test (not by
 * the adapter) and deleted on {@link #close()}. Test code only: synchronized, one channel.
 */
final class TestQueue implements AutoCloseable {
  /** The quorum queues' delivery limit: well above every test's maxAttempts. */
  static final int DELIVERY_LIMIT = 20;

  final String name;
  final RabbitQueueType type;
  private final Connection connection;
  private Channel channel;
  private final List<DeadLetteredMessage> deadLetters = new ArrayList<>();

  private TestQueue(String name, RabbitQueueType type, boolean declare) throws Exception {
    this.name = name;
    this.type = type;
    this.connection = RabbitFixture.shared().connectionFactory().newConnection("idem-test-admin-" + name);
    this.channel = connection.createChannel();
    channel.confirmSelect();
    if (declare) {
      channel.exchangeDeclare(name + ".dlx", BuiltinExchangeType.FANOUT, true);
      channel.queueDeclare(name + ".dlq", true, false, false, Map.of("x-queue-type", type.argument()));
      channel.queueBind(name + ".dlq", name + ".dlx", "");
      channel.queueDeclare(name, true, false, false, config().queueArguments());
    }
  }

  /** Declares {@code <prefix>-<random>} as {@link #config()} describes it. */
  static TestQueue declare(String prefix, RabbitQueueType type) throws Exception {
    return new TestQueue(unique(prefix), type, true);
  }

  /** Declares nothing: the test declares what it needs through {@link #channel()}. */
  static TestQueue undeclared(String prefix, RabbitQueueType type) throws Exception {
    return new TestQueue(unique(prefix), type, false);
  }

  static String unique(String prefix) {
    return "idem-test-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** The adapter configuration matching this queue; fast recovery and shutdown for tests. */
  RabbitConsumerConfig.Builder configBuilder() {
    RabbitConsumerConfig.Builder b = RabbitConsumerConfig.builder(name)
        .uri(RabbitFixture.shared().uri())
        .queueType(type)
        .connectionName("idem-test-" + name)
        .recoveryInterval(java.time.Duration.ofMillis(300))
        .shutdownTimeout(java.time.Duration.ofSeconds(20));
    if (type == RabbitQueueType.QUORUM) {
      b.deliveryLimit(DELIVERY_LIMIT);
    }
    return b;
  }

  RabbitConsumerConfig config() {
    return configBuilder().build();
  }

  synchronized Channel channel() throws Exception {
    if (!channel.isOpen()) {
      channel = connection.createChannel();
      channel.confirmSelect();
    }
    return channel;
  }

  /** Publishes persistently to the queue (default exchange) and waits for the confirm. */
  synchronized void publish(Map<String, String> headers, byte[] payload) {
    try {
      Map<String, Object> amqp = new LinkedHashMap<>(headers);
      AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
          .messageId(UUID.randomUUID().toString())
          .deliveryMode(2)
          .headers(amqp)
          .build();
      channel().basicPublish("", name, props, payload);
      channel().waitForConfirmsOrDie(10_000);
    } catch (Exception e) {
      throw new IllegalStateException("could not publish to " + name + ": " + e, e);
    }
  }

  void publish(String key, String payload) {
    publish(Map.of("idempotency-key", key), payload.getBytes(StandardCharsets.UTF_8));
  }

  /** Ready messages of the queue (unacked ones of open channels are not counted). */
  synchronized long ready() {
    try {
      return channel().queueDeclarePassive(name).getMessageCount();
    } catch (Exception e) {
      throw new IllegalStateException("could not count " + name + ": " + e, e);
    }
  }

  /** Consumers subscribed to the queue right now (basicConsume on any open channel). */
  synchronized int consumers() {
    try {
      return channel().queueDeclarePassive(name).getConsumerCount();
    } catch (Exception e) {
      throw new IllegalStateException("could not count the consumers of " + name + ": " + e, e);
    }
  }

  /** Everything that reached {@code <name>.dlq} so far (drained into a list). */
  synchronized List<DeadLetteredMessage> deadLetters() {
    try {
      for (GetResponse r; (r = channel().basicGet(name + ".dlq", true)) != null; ) {
        Map<String, String> headers = new LinkedHashMap<>();
        Map<String, Object> raw = r.getProps().getHeaders();
        if (raw != null) {
          raw.forEach((k, v) -> {
            if (v instanceof LongString s) {
              headers.put(k, new String(s.getBytes(), StandardCharsets.UTF_8));
            } else if (v != null && !(v instanceof List<?>) && !(v instanceof Map<?, ?>)) {
              headers.put(k, v.toString());
            }
          });
        }
        deadLetters.add(new DeadLetteredMessage(headers, r.getBody()));
      }
      return new ArrayList<>(deadLetters);
    } catch (Exception e) {
      throw new IllegalStateException("could not read " + name + ".dlq: " + e, e);
    }
  }

  @Override
  public synchronized void close() {
    try {
      Channel ch = channel();
      ch.queueDelete(name);
      ch.queueDelete(name + ".dlq");
      ch.exchangeDelete(name + ".dlx");
    } catch (Exception e) {
      System.out.println("could not clean up " + name + ": " + e);
    } finally {
      try {
        connection.close();
      } catch (Exception ignored) {
        // best effort
      }
    }
  }
}
