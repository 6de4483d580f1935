package io.idem.spring;

import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotentConsumer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * The consumers of {@code idem.consumers.*}, each an Idem adapter ({@link BrokerConsumer}) on a
 * pipeline of {@link IdemPipelines} with the named handler bean, started with the application
 * context and closed with it: {@link #stop()} closes each consumer, which stops fetching, lets
 * in-flight messages finish and settles them (committed ones acked, the rest left for
 * redelivery), up to the adapter's shutdown timeout ({@code idem.consumers.<name>.shutdown-timeout}).
 * Started in the default lifecycle phase, so after the listener-container checks and with the
 * application's other consumers; stopped before the DataSource closes.
 *
 * <p>A misconfigured consumer (unknown handler bean, missing {@code source}, an adapter not on
 * the classpath) fails the start-up with the consumer's name. Thread-safe.
 */
public final class IdemConsumers implements SmartLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(IdemConsumers.class);

  private final IdemProperties properties;
  private final IdemPipelines pipelines;
  private final BeanFactory beans;
  private final Environment environment;
  private final Map<String, BrokerConsumer> running = Collections.synchronizedMap(new LinkedHashMap<>());

  IdemConsumers(IdemProperties properties, IdemPipelines pipelines, BeanFactory beans,
      Environment environment) {
    this.properties = properties;
    this.pipelines = pipelines;
    this.beans = beans;
    this.environment = environment;
  }

  /** The running consumers by name (empty before {@link #start()} and after {@link #stop()}). */
  public Map<String, BrokerConsumer> consumers() {
    synchronized (running) {
      return Map.copyOf(running);
    }
  }

  /** The names of {@code idem.consumers.*}, configured or not yet started. */
  public List<String> consumerNames() {
    return List.copyOf(properties.getConsumers().keySet());
  }

  /** Each running consumer's {@link ConsumerHealth}, by name; no broker or database access. */
  public Map<String, ConsumerHealth> health() {
    Map<String, ConsumerHealth> health = new LinkedHashMap<>();
    consumers().forEach((name, consumer) -> health.put(name, consumer.health()));
    return health;
  }

  @Override
  public void start() {
    for (Map.Entry<String, IdemProperties.Consumer> entry : properties.getConsumers().entrySet()) {
      String name = entry.getKey();
      BrokerConsumer consumer;
      try {
        consumer = create(name, entry.getValue());
        consumer.start();
      } catch (RuntimeException e) {
        stop();
        throw new IllegalStateException("idem.consumers." + name + ": " + e.getMessage(), e);
      }
      running.put(name, consumer);
      LOG.info("idem.consumers.{} started ({})", name, entry.getValue().getBroker());
    }
  }

  @Override
  public void stop() {
    List<Map.Entry<String, BrokerConsumer>> started;
    synchronized (running) {
      started = new ArrayList<>(running.entrySet());
      running.clear();
    }
    Collections.reverse(started);
    for (Map.Entry<String, BrokerConsumer> entry : started) {
      try {
        entry.getValue().close();
      } catch (RuntimeException e) {
        LOG.warn("idem.consumers.{} did not close cleanly: {}", entry.getKey(), e.toString());
      }
    }
  }

  @Override
  public boolean isRunning() {
    return !running.isEmpty();
  }

  private BrokerConsumer create(String name, IdemProperties.Consumer config) {
    IdemProperties.Broker broker = require(config.getBroker(), "broker");
    String source = require(config.getSource(), "source");
    String handlerName = require(config.getHandler(), "handler");
    String group = config.getConsumerGroup() != null ? config.getConsumerGroup() : name;
    IdempotentConsumer<SqlSession> pipeline = pipelines.pipeline(group, beans.getBean(handlerName));
    String module = switch (broker) {
      case KAFKA -> "io.idem.kafka.KafkaIdempotentConsumer";
      case RABBITMQ -> "io.idem.rabbitmq.RabbitIdempotentConsumer";
      case SQS -> "io.idem.sqs.SqsIdempotentConsumer";
      case JMS -> "io.idem.jms.JmsIdempotentConsumer";
    };
    if (!ClassUtils.isPresent(module, getClass().getClassLoader())) {
      throw new IllegalStateException("broker " + broker + " needs " + module
          + " on the classpath (add idem-" + broker.name().toLowerCase(java.util.Locale.ROOT) + ")");
    }
    return switch (broker) {
      case KAFKA -> IdemAdapters.kafka(name, config, source, group, pipeline,
          config.getBootstrapServers() != null ? config.getBootstrapServers()
              : environment.getProperty("spring.kafka.bootstrap-servers", "localhost:9092"));
      case RABBITMQ -> IdemAdapters.rabbit(name, config, source, pipeline);
      case SQS -> IdemAdapters.sqs(config, source, pipeline);
      case JMS -> IdemAdapters.jms(config, source, pipeline,
          beans.getBean(jakarta.jms.ConnectionFactory.class));
    };
  }

  private static <T> T require(@Nullable T value, String property) {
    if (value == null || (value instanceof String text && text.isBlank())) {
      throw new IllegalStateException(property + " is required");
    }
    return value;
  }
}
