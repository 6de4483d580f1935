package io.idem.demo;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.MessageProperties;
import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Utf8;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.ServerUnavailableException;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.rabbitmq.RabbitOutboxPublisher;
import io.idem.rabbitmq.RabbitQueueType;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** The demo on RabbitMQ: a quorum queue with its dead-letter exchange and queue. */
final class RabbitDemoBroker implements DemoBroker {
  private static final String CONTENT_TYPE = "content-type";
  private static final int DELIVERY_LIMIT = 100;
  private @Nullable String uri;
  private @Nullable Connection admin;

  RabbitDemoBroker(Map<String, String> args) {
    this.uri = args.get("rabbitmq-uri");
  }

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public int defaultMaxBatchSize() {
    return RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE;
  }

  /**
   * Checks that RabbitMQ answers: at {@code --rabbitmq-uri} when given, else where {@link
   * RabbitFixture} looks ({@code IDEM_RABBITMQ_URI}, Docker, the local server on 5672).
   *
   * @throws MissingPrerequisite when it does not, in one line with what was tried and how to fix it
   */
  @Override
  public String start() {
    String given = uri;
    if (given != null) {
      probe(given);
      return "RabbitMQ: --rabbitmq-uri " + MissingPrerequisite.redact(given);
    }
    RabbitFixture fixture;
    try {
      fixture = RabbitFixture.shared();
    } catch (ServerUnavailableException e) {
      String env = System.getenv("IDEM_RABBITMQ_URI");
      throw new MissingPrerequisite("no RabbitMQ (tried " + (env != null && !env.isBlank()
          ? "IDEM_RABBITMQ_URI " + MissingPrerequisite.redact(env)
          : "Docker and the local server at amqp://guest:***@127.0.0.1:5672") + ": " + rootCause(e)
          + "): start RabbitMQ (rabbitmq-server -detached) or pass --rabbitmq-uri amqp://USER:PASSWORD@HOST:5672/%2F", e);
    }
    uri = fixture.uri();
    return "RabbitMQ: " + fixture.origin();
  }

  private static String rootCause(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.toString();
  }

  private static void probe(String uri) {
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(uri);
    } catch (Exception e) {
      throw new MissingPrerequisite("--rabbitmq-uri " + MissingPrerequisite.redact(uri) + " is not an AMQP URI ("
          + e.getMessage() + "): write it like amqp://USER:PASSWORD@HOST:5672/%2F", e);
    }
    factory.setConnectionTimeout(3_000);
    factory.setAutomaticRecoveryEnabled(false);
    try (Connection probe = factory.newConnection("idem-demo-probe")) {
      probe.getServerProperties(); // connected: nothing more to ask
    } catch (Exception e) {
      throw new MissingPrerequisite("no RabbitMQ at --rabbitmq-uri " + MissingPrerequisite.redact(uri) + " (" + e
          + "): start RabbitMQ there (rabbitmq-server -detached) or pass the --rabbitmq-uri of one that runs", e);
    }
  }

  private RabbitConsumerConfig.Builder config(String queue) {
    return RabbitConsumerConfig.builder(queue)
        .uri(uri())
        .queueType(RabbitQueueType.QUORUM)
        .deliveryLimit(DELIVERY_LIMIT)
        .prefetch(50)
        .concurrency(4)
        .recoveryInterval(Duration.ofMillis(500));
  }

  private synchronized Channel channel() {
    try {
      if (admin == null || !admin.isOpen()) {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        admin = factory.newConnection("idem-demo-admin");
      }
      Channel channel = admin.createChannel();
      channel.confirmSelect();
      return channel;
    } catch (Exception e) {
      throw new IllegalStateException("RabbitMQ at " + uri + " refused a channel: " + e.getMessage(), e);
    }
  }

  @Override
  public void createDestination(String queue) {
    Channel channel = channel();
    try {
      channel.exchangeDeclare(queue + ".dlx", BuiltinExchangeType.FANOUT, true);
      channel.queueDeclare(queue + ".dlq", true, false, false, deadLetterQueueArguments());
      channel.queueBind(queue + ".dlq", queue + ".dlx", "");
      channel.queueDeclare(queue, true, false, false, config(queue).build().queueArguments());
      channel.close();
    } catch (Exception e) {
      throw new IllegalStateException("could not declare " + queue + ": " + e.getMessage(), e);
    }
  }

  /**
   * A quorum dead-letter queue; on RabbitMQ 4, with {@code x-delivery-limit=-1}, as idem-rabbitmq's
   * topology declares it: RabbitMQ 4's default limit of 20 would drop a dead letter the dead-letter
   * tool returned that often (3.x has no default, and takes -1 as 0).
   */
  private Map<String, Object> deadLetterQueueArguments() {
    Object version = Objects.requireNonNull(admin, "channel() first").getServerProperties().get("version");
    boolean four = version != null && version.toString().matches("^([4-9]|\\d{2,})\\..*");
    return four ? Map.of("x-queue-type", "quorum", "x-delivery-limit", -1) : Map.of("x-queue-type", "quorum");
  }

  @Override
  public void publish(String queue, List<Outbound> messages) {
    Channel channel = channel();
    try {
      for (Outbound m : messages) {
        Map<String, Object> headers = new LinkedHashMap<>();
        // valid UTF-8 travels as an AMQP long string, anything else as an AMQP byte array
        m.headers().forEach((name, value) -> headers.put(name, Utf8.isValid(value)
            ? new String(value, StandardCharsets.UTF_8) : value));
        // a content type travels where AMQP (and the CloudEvents AMQP binding) carries it: the property
        Object contentType = headers.remove(CONTENT_TYPE);
        AMQP.BasicProperties props = MessageProperties.PERSISTENT_BASIC.builder()
            .headers(headers)
            .contentType(contentType instanceof String type ? type : "application/json")
            .build();
        channel.basicPublish("", queue, props, m.payload());
      }
      channel.waitForConfirmsOrDie(60_000);
      channel.close();
    } catch (Exception e) {
      throw new IllegalStateException("publishing to " + queue + " failed: " + e.getMessage(), e);
    }
  }

  @Override
  public List<String> connectionArgs() {
    return List.of("--rabbitmq-uri=" + uri);
  }

  /** Per-message mode ({@code maxBatchSize(1)}). */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline) {
    return consumer(queue, pipeline, 1);
  }

  /** Batches of up to {@code maxBatchSize}; the prefetch window holds at least two batches. */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize) {
    return consumer(queue, pipeline, maxBatchSize, null);
  }

  /** With {@code crashes}: the adapter's connections come from its wrapping factory. */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize,
      @Nullable BrokerCallCrashes crashes) {
    RabbitConsumerConfig config = config(queue)
        .maxBatchSize(maxBatchSize)
        .prefetch(Math.max(50, 2 * maxBatchSize))
        .connectionName("idem-demo-" + queue).build();
    return crashes == null
        ? RabbitIdempotentConsumer.create(config, pipeline)
        : RabbitIdempotentConsumer.create(config, pipeline, crashes.rabbit(uri()));
  }

  /** One {@code basicAck} per delivery, also in batch mode. */
  @Override
  public long settlingCallsAtLeast(long messages, int maxBatchSize) {
    return messages;
  }

  /** Publisher confirms and {@code mandatory} on the default exchange: the routing key is the queue. */
  @Override
  public OutboxPublisher outboxPublisher() {
    try {
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(uri);
      Connection connection = factory.newConnection("idem-demo-relay");
      RabbitOutboxPublisher publisher = RabbitOutboxPublisher.create(connection, "");
      return new OutboxPublisher() {
        @Override
        public void publish(OutboxMessage message) throws Exception {
          publisher.publish(message);
        }

        @Override
        public java.util.List<io.idem.spi.OutboxPublishResult> publishAll(java.util.List<OutboxMessage> messages)
            throws Exception {
          return publisher.publishAll(messages);
        }

        @Override
        public void close() throws Exception {
          publisher.close();
          connection.close();
        }
      };
    } catch (Exception e) {
      throw new IllegalStateException("RabbitMQ at " + uri + " refused the relay's connection: " + e.getMessage(), e);
    }
  }

  @Override
  public long pending(String queue, String group) {
    return count(queue);
  }

  @Override
  public long deadLettered(String queue) {
    return count(queue + ".dlq");
  }

  @Override
  public List<DeadLetteredMessage> readDeadLetters(String queue) {
    List<DeadLetteredMessage> out = new ArrayList<>();
    Channel channel = channel();
    try {
      // fetched unacknowledged on one channel (so none comes twice), returned when it closes
      for (GetResponse r; (r = channel.basicGet(queue + ".dlq", false)) != null; ) {
        out.add(new DeadLetteredMessage(textHeaders(r.getProps().getHeaders()), r.getBody()));
      }
      channel.close();
      return out;
    } catch (Exception e) {
      throw new IllegalStateException("could not read " + queue + ".dlq: " + e.getMessage(), e);
    }
  }

  /** AMQP headers as the adapter reads them: text as strict UTF-8, structures left out. */
  private static Map<String, String> textHeaders(Map<String, Object> raw) {
    Map<String, String> headers = new LinkedHashMap<>();
    if (raw == null) {
      return headers;
    }
    raw.forEach((name, value) -> {
      byte[] bytes = value instanceof LongString s ? s.getBytes() : value instanceof byte[] b ? b : null;
      if (bytes != null) {
        if (Utf8.isValid(bytes)) {
          headers.put(name, new String(bytes, StandardCharsets.UTF_8));
        }
      } else if (value instanceof Date date) {
        headers.put(name, date.toInstant().toString());
      } else if (value != null && !(value instanceof List<?>) && !(value instanceof Map<?, ?>)) {
        headers.put(name, value.toString());
      }
    });
    return headers;
  }

  private long count(String queue) {
    Channel channel = channel();
    try {
      long n = channel.queueDeclarePassive(queue).getMessageCount();
      channel.close();
      return n;
    } catch (Exception e) {
      throw new IllegalStateException("could not read " + queue + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void deleteDestination(String queue) {
    Channel channel = channel();
    try {
      channel.queueDelete(queue);
      channel.queueDelete(queue + ".dlq");
      channel.exchangeDelete(queue + ".dlx");
      channel.close();
    } catch (Exception e) {
      System.err.println("could not delete " + queue + ": " + e.getMessage());
    }
  }

  @Override
  public void close() {
    try {
      if (admin != null && admin.isOpen()) {
        admin.close();
      }
    } catch (Exception ignored) {
      // closing anyway
    }
  }

  private String uri() {
    if (uri == null) {
      throw new IllegalStateException("start() first: no RabbitMQ URI yet");
    }
    return uri;
  }
}
