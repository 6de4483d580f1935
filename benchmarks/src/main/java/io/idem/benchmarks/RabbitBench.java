package io.idem.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.MessageProperties;
import io.idem.fixtures.RabbitFixture;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.rabbitmq.RabbitQueueType;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * RabbitMQ: per run a quorum queue with its {@code .dlx} and {@code .dlq}, declared as the README's
 * RabbitMQ quick start declares them ({@code queueType(QUORUM).deliveryLimit(20)}); persistent
 * messages published with confirms. Idem's {@code idem} variant is the quick start's consumer with
 * the adapter's defaults (one worker; batch mode: {@code RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE}
 * with the derived prefetch, twice that), {@code idem-per-message} sets {@code maxBatchSize(1)}
 * (prefetch 10); the batch variants and the batched plain consumer use a prefetch of twice the batch
 * size (docs/BROKERS.md: the next batch arrives while one is processed), the plain per-message
 * consumer 10.
 */
final class RabbitBench implements BenchBroker {
  static final int DELIVERY_LIMIT = 20;
  private final String uri;
  private final String origin;
  private final Connection admin;

  private RabbitBench(String uri, String origin) throws Exception {
    this.uri = uri;
    this.origin = origin;
    this.admin = factory(uri).newConnection("idem-bench-admin");
  }

  /** RabbitMQ at AMQP URI {@code uri}, else the fixtures' ({@code IDEM_RABBITMQ_URI}, else 127.0.0.1:5672). */
  static RabbitBench connect(@Nullable String uri) {
    try {
      if (uri != null) {
        return new RabbitBench(uri, "--rabbitmq-uri " + uri.replaceAll("//([^:/@]+):[^@]*@", "//$1:***@"));
      }
      RabbitFixture fixture = RabbitFixture.shared();
      return new RabbitBench(fixture.uri(), fixture.origin());
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("RabbitMQ does not answer: " + e, e);
    }
  }

  static ConnectionFactory factory(String uri) throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(uri);
    factory.setAutomaticRecoveryEnabled(false);
    return factory;
  }

  @Override
  public String name() {
    return "rabbitmq";
  }

  @Override
  public String describe() {
    return "RabbitMQ " + admin.getServerProperties().get("version") + " (" + origin + "), quorum queues";
  }

  @Override
  public String address() {
    return uri;
  }

  @Override
  public int defaultBatchSize() {
    return 10;
  }

  /** The prefetch of a variant: the quick start's default per message, twice the batch size in batches. */
  static int prefetch(Variant variant, int maxBatchSize) {
    return variant.batched() ? RabbitConsumerConfig.defaultPrefetch(maxBatchSize) : RabbitConsumerConfig.DEFAULT_PREFETCH;
  }

  private static RabbitConsumerConfig.Builder quickStart(String queue, String uri) {
    return RabbitConsumerConfig.builder(queue).uri(uri)
        .queueType(RabbitQueueType.QUORUM).deliveryLimit(DELIVERY_LIMIT)
        .declareTopology(true);
  }

  @Override
  public void create(String id) throws Exception {
    RabbitConsumerConfig config = quickStart(id, uri).build();
    try (Channel channel = admin.createChannel()) {
      channel.exchangeDeclare(config.deadLetterExchange(), BuiltinExchangeType.FANOUT, true);
      channel.queueDeclare(config.deadLetterQueue(), true, false, false, Map.of("x-queue-type", "quorum"));
      channel.queueBind(config.deadLetterQueue(), config.deadLetterExchange(), "");
      channel.queueDeclare(id, true, false, false, config.queueArguments());
    }
  }

  @Override
  public void publish(String id, OrderStream stream) throws Exception {
    try (Channel channel = admin.createChannel()) {
      channel.confirmSelect();
      int unconfirmed = 0;
      for (OrderStream.Order o : stream.records()) {
        AMQP.BasicProperties props = MessageProperties.PERSISTENT_BASIC.builder()
            .headers(Map.of(OrderStream.KEY_HEADER, o.orderId()))
            .contentType("application/json")
            .build();
        channel.basicPublish("", id, props, o.payload());
        if (++unconfirmed == 1000) {
          channel.waitForConfirmsOrDie(120_000);
          unconfirmed = 0;
        }
      }
      channel.waitForConfirmsOrDie(120_000);
    }
  }

  @Override
  public AutoCloseable start(Variant variant, Run run, BenchDatabase db, Progress progress) throws Exception {
    int prefetch = prefetch(variant, run.maxBatchSize());
    if (!variant.idem) {
      return new RawRabbitConsumer(uri, run.destination(), prefetch, db, progress, variant.batched(),
          run.maxBatchSize()).start();
    }
    RabbitConsumerConfig.Builder config = quickStart(run.destination(), uri)
        .connectionName("idem-bench-" + run.destination())
        .concurrency(run.concurrency());
    if (variant.batched()) {
      config.maxBatchSize(run.maxBatchSize()).prefetch(prefetch);
    } else if (variant == Variant.IDEM_PER_MESSAGE) {
      config.maxBatchSize(1);
    }
    RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config.build(),
        Consumers.pipeline(variant, db, run.destination(), progress));
    consumer.start();
    return consumer;
  }

  @Override
  public void delete(String id) {
    RabbitConsumerConfig config = quickStart(id, uri).build();
    try (Channel channel = admin.createChannel()) {
      channel.queueDelete(id);
      channel.queueDelete(config.deadLetterQueue());
      channel.exchangeDelete(config.deadLetterExchange());
    } catch (Exception e) {
      System.err.println("could not delete queue " + id + ": " + e);
    }
  }

  @Override
  public void close() {
    try {
      admin.close();
    } catch (Exception e) {
      // closing anyway
    }
  }
}
