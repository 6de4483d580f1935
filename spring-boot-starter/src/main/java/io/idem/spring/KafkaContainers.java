package io.idem.spring;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.BytesDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;
import org.springframework.context.ApplicationContext;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.serializer.ErrorHandlingDeserializer;
import org.springframework.util.ReflectionUtils;

/**
 * Spring Kafka's containers of {@code @Idempotent} methods. What Idem reads and does:
 *
 * <ul>
 *   <li>the error handler and its back-off, whatever they are (Spring Boot's default {@code
 *       DefaultErrorHandler}: 10 deliveries, then log and skip): <em>owned</em>. Idem retries
 *       inside the call within the {@link KafkaBudget}, and wraps the container's handler in
 *       {@link IdemKafkaErrorHandler}, which takes what Idem hands back (seek, pause the
 *       partition for the rest of the backoff) and passes only other failures to the
 *       application's handler; so Spring's handler never counts or skips an Idem message;
 *   <li>a transaction manager (Kafka or database transactions around the listener):
 *       <em>refused</em>, Idem must own the only transaction;
 *   <li>AckMode {@code MANUAL}, {@code MANUAL_IMMEDIATE}: <em>refused</em> (offsets committed only
 *       when the method acknowledges, which an {@code @Idempotent} method cannot); every other
 *       AckMode commits after the listener returned;
 *   <li>{@code enable.auto.commit=true}: <em>refused</em> (the consumer commits polled offsets in
 *       the background, before Idem's commit);
 *   <li>a value deserializer that does not give {@code String} or {@code byte[]} (Idem needs the
 *       bytes to fingerprint and dead-letter): <em>refused</em>; convert to POJOs with a message
 *       converter instead;
 *   <li>{@code max.poll.interval.ms} and {@code max.poll.records}: the {@link KafkaBudget};
 *   <li>the consumer rebalance listener: <em>composed</em> with Idem's {@link KafkaAssignments}
 *       (which flags the records of a freshly assigned partition as possible redeliveries), and
 *       called as before.
 * </ul>
 */
final class KafkaContainers implements ListenerContainers {

  @Override
  public String kind() {
    return "kafka";
  }

  @Override
  public List<Container> find(ApplicationContext context, Resources resources) {
    Set<MessageListenerContainer> all = new LinkedHashSet<>();
    context.getBeansOfType(KafkaListenerEndpointRegistry.class, false, false).values()
        .forEach(registry -> all.addAll(registry.getAllListenerContainers()));
    all.addAll(context.getBeansOfType(MessageListenerContainer.class, false, false).values());
    List<Container> found = new ArrayList<>();
    for (MessageListenerContainer container : all) {
      Object listener = container.getContainerProperties().getMessageListener();
      Set<Method> methods = new LinkedHashSet<>();
      ListenerMethods.of(listener).stream().filter(ListenerContainers::idempotent).forEach(methods::add);
      if (!methods.isEmpty()) {
        found.add(new KafkaContainer(container, methods, resources));
      }
    }
    return found;
  }

  private static final class KafkaContainer implements Container {
    private final MessageListenerContainer container;
    private final Set<Method> methods;
    private final Resources resources;
    private final Map<String, Object> consumerConfig;
    private final @Nullable ConsumerFactory<?, ?> consumerFactory;

    KafkaContainer(MessageListenerContainer container, Set<Method> methods, Resources resources) {
      this.container = container;
      this.methods = methods;
      this.resources = resources;
      this.consumerFactory = consumerFactory(container);
      this.consumerConfig = consumerConfig(container, consumerFactory);
    }

    @Override
    public String name() {
      ContainerProperties properties = container.getContainerProperties();
      String topics = properties.getTopics() != null ? String.join(",", properties.getTopics())
          : properties.getTopicPattern() != null ? properties.getTopicPattern().pattern() : "?";
      return "Kafka container '" + container.getListenerId() + "' (topics " + topics + ")";
    }

    @Override
    public Set<Method> methods() {
      return methods;
    }

    @Override
    public List<String> refusals() {
      List<String> refused = new ArrayList<>();
      ContainerProperties properties = container.getContainerProperties();
      if (properties.getKafkaAwareTransactionManager() != null || properties.getTransactionManager() != null) {
        refused.add(name() + " has a transaction manager (ContainerProperties.transactionManager):"
            + " remove it from the container factory; Idem opens and commits the database"
            + " transaction itself, and a Kafka or database transaction around it would hold Idem's claim");
      }
      AckMode ackMode = properties.getAckMode();
      if (ackMode == AckMode.MANUAL || ackMode == AckMode.MANUAL_IMMEDIATE) {
        refused.add(name() + " has AckMode " + ackMode + ": offsets would be committed only when the"
            + " method calls Acknowledgment.acknowledge(), which an @Idempotent method cannot take;"
            + " use BATCH (the default) or RECORD (spring.kafka.listener.ack-mode)");
      }
      if ("true".equalsIgnoreCase(String.valueOf(consumerConfig.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG)))) {
        refused.add(name() + " has enable.auto.commit=true: the consumer would commit offsets in the"
            + " background, before Idem's commit; remove it (spring.kafka.consumer.enable-auto-commit),"
            + " Spring Kafka then commits after the listener returned");
      }
      String deserializer = valueDeserializer();
      if (deserializer != null && !deserializer.equals(StringDeserializer.class.getName())
          && !deserializer.equals(ByteArrayDeserializer.class.getName())
          && !deserializer.equals(BytesDeserializer.class.getName())) {
        refused.add(name() + " deserializes record values with " + deserializer + ": Idem needs the"
            + " value as String or byte[] to fingerprint it and dead-letter it unchanged; use"
            + " StringDeserializer or ByteArrayDeserializer (spring.kafka.consumer.value-deserializer)"
            + " and let Spring's message converter make the POJO (e.g. a JsonMessageConverter on the"
            + " container factory, or Spring Boot's default for a @Payload parameter)");
      }
      Object listener = properties.getMessageListener();
      if (listener instanceof BatchMessageListener<?, ?>) {
        for (Method method : methods) {
          if (java.util.Arrays.stream(method.getParameterTypes()).noneMatch(java.util.List.class::isAssignableFrom)) {
            refused.add(name() + " is a batch listener, and " + method.getName() + " takes no List:"
                + " Idem maps a batch onto its batch mode and needs the records, messages or payloads"
                + " as a List (not ConsumerRecords)");
          }
          Idempotent annotation = org.springframework.core.annotation.AnnotatedElementUtils
              .findMergedAnnotation(method, Idempotent.class);
          boolean argumentKey = annotation != null && (!annotation.key().isEmpty() || java.util.Arrays
              .stream(method.getParameters()).anyMatch(p -> p.isAnnotationPresent(IdempotencyKey.class)));
          if (argumentKey) {
            refused.add(name() + " is a batch listener, and " + method.getName() + " takes its key"
                + " from an argument (@IdempotencyKey or key = SpEL): a batch has a key per record;"
                + " use keyHeader, keyJsonPointer or idem.key.*");
          }
        }
      }
      if (!(container instanceof AbstractMessageListenerContainer<?, ?>)) {
        refused.add(name() + " is a " + container.getClass().getName() + ", not one of Spring"
            + " Kafka's containers, so Idem cannot own its error handling");
      }
      return refused;
    }

    @Override
    public String settings() {
      ContainerProperties properties = container.getContainerProperties();
      CommonErrorHandler handler = container instanceof AbstractMessageListenerContainer<?, ?> c
          ? c.getCommonErrorHandler() : null;
      return name() + ": AckMode " + properties.getAckMode() + ", error handler "
          + (handler == null ? "Spring's default DefaultErrorHandler" : handler.getClass().getSimpleName())
          + " (Idem retries itself; the handler sees no Idem message), "
          + budget(properties.getMessageListener() instanceof BatchMessageListener<?, ?>);
    }

    private KafkaBudget budget(boolean batch) {
      Duration interval = Duration.ofMillis(number(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
          KafkaBudget.DEFAULT_MAX_POLL_INTERVAL.toMillis()));
      int records = (int) number(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, KafkaBudget.DEFAULT_MAX_POLL_RECORDS);
      return batch ? KafkaBudget.forBatches(interval, records) : KafkaBudget.forRecords(interval, records);
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public void takeOver() {
      AbstractMessageListenerContainer<?, ?> owned = (AbstractMessageListenerContainer<?, ?>) container;
      ContainerProperties properties = owned.getContainerProperties();
      Object listener = properties.getMessageListener();
      if (listener instanceof IdemKafkaCapture.Records || listener instanceof IdemKafkaCapture.Batches) {
        return; // taken over already (a context refreshed twice)
      }
      // the container's rebalance listener (the application's, or Spring Kafka's logging one)
      // keeps its callbacks; Idem's learns which partitions are freshly assigned
      KafkaAssignments assignments = new KafkaAssignments(properties.getConsumerRebalanceListener());
      properties.setConsumerRebalanceListener(assignments);
      if (listener instanceof BatchMessageListener<?, ?> batch) {
        properties.setMessageListener(new IdemKafkaCapture.Batches((BatchMessageListener) batch, budget(true),
            assignments));
      } else {
        properties.setMessageListener(new IdemKafkaCapture.Records((MessageListener) listener, budget(false),
            assignments, methods.iterator().next(), resources.unconvertible()));
      }
      CommonErrorHandler handler = owned.getCommonErrorHandler();
      owned.setCommonErrorHandler(new IdemKafkaErrorHandler(
          handler == null ? new DefaultErrorHandler() : handler, resources.scheduler()));
    }

    private long number(String name, long fallback) {
      Object value = consumerConfig.get(name);
      if (value instanceof Number n) {
        return n.longValue();
      }
      try {
        return value == null ? fallback : Long.parseLong(value.toString().trim());
      } catch (NumberFormatException e) {
        return fallback;
      }
    }

    /** The value deserializer's class name, the delegate's for an ErrorHandlingDeserializer; or null. */
    private @Nullable String valueDeserializer() {
      Object deserializer = null;
      if (consumerFactory != null) {
        try {
          deserializer = consumerFactory.getValueDeserializer();
        } catch (RuntimeException e) {
          deserializer = null;
        }
      }
      if (deserializer == null) {
        deserializer = consumerConfig.get(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG);
      }
      String name = className(deserializer);
      if (ErrorHandlingDeserializer.class.getName().equals(name)) {
        name = className(consumerConfig.get(ErrorHandlingDeserializer.VALUE_DESERIALIZER_CLASS));
      }
      return name;
    }

    private static @Nullable String className(@Nullable Object deserializer) {
      if (deserializer == null) {
        return null;
      }
      if (deserializer instanceof Class<?> type) {
        return type.getName();
      }
      if (deserializer instanceof String text) {
        return text.trim();
      }
      if (deserializer instanceof ErrorHandlingDeserializer<?>) {
        return ErrorHandlingDeserializer.class.getName();
      }
      return deserializer.getClass().getName();
    }

    /** Spring Kafka keeps the container's consumer factory in a protected field: read it. */
    private static @Nullable ConsumerFactory<?, ?> consumerFactory(MessageListenerContainer container) {
      Field field = ReflectionUtils.findField(container.getClass(), "consumerFactory", ConsumerFactory.class);
      if (field == null) {
        return null;
      }
      try {
        ReflectionUtils.makeAccessible(field);
        return (ConsumerFactory<?, ?>) field.get(container);
      } catch (RuntimeException | IllegalAccessException e) {
        return null;
      }
    }

    @Override
    public List<io.idem.spi.RedeliveryHorizon.Horizon> horizons(List<String> unreadable) {
      String[] topics = container.getContainerProperties().getTopics();
      if (topics == null || topics.length == 0 || !KafkaTopicHorizons.available()) {
        return List.of(); // a pattern or assigned partitions: not read (docs/SPRING-BOOT.md, "Retention")
      }
      return KafkaTopicHorizons.read(consumerConfig, List.of(topics), unreadable);
    }

    /** The consumer's configuration: the factory's, overridden by the container's properties. */
    private static Map<String, Object> consumerConfig(MessageListenerContainer container,
        @Nullable ConsumerFactory<?, ?> factory) {
      Map<String, Object> config = new LinkedHashMap<>();
      if (factory != null) {
        try {
          config.putAll(factory.getConfigurationProperties());
        } catch (UnsupportedOperationException e) {
          // a factory that does not expose its configuration: the container's overrides only
        }
      }
      container.getContainerProperties().getKafkaConsumerProperties()
          .forEach((name, value) -> config.put(String.valueOf(name), value));
      return config;
    }
  }
}
