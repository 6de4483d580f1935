package io.idem.spring;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.InboundMessage;
import io.idem.spi.Utf8;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.KafkaUtils;

/**
 * {@code @KafkaListener} methods. The delivery is the {@link ConsumerRecord} (String or byte[]
 * value: Idem fingerprints and dead-letters the bytes); batch listeners run through {@link
 * KafkaBatchInvocation}. Idem retries inside the call ({@link #retriesInCall()}). The dead letter
 * is produced with the application's {@link ProducerFactory} (byte[] serializers) to {@code
 * <topic>.DLT} by default, the record's key, payload and headers kept, Idem's reason headers and
 * {@code idem-original-topic}/{@code -partition}/{@code -offset}/{@code -timestamp} added (with
 * {@code idem.dead-letter.spring-kafka-headers=true} also Spring Kafka's {@code
 * DeadLetterPublishingRecoverer} headers, {@code kafka_dlt-original-topic} …), and waited for (the
 * producer's acknowledgement, up to 30 s) before the method returns.
 */
final class KafkaDeliveries implements ListenerDeliveries {
  /** Suffix of the default dead-letter topic, as Spring Kafka's and Idem's Kafka adapter's: {@value}. */
  static final String DEAD_LETTER_SUFFIX = ".DLT";
  /** The original's coordinates on a dead letter, as Idem's Kafka adapter names them. */
  static final String HEADER_ORIGINAL_TOPIC = "idem-original-topic";
  static final String HEADER_ORIGINAL_PARTITION = "idem-original-partition";
  static final String HEADER_ORIGINAL_OFFSET = "idem-original-offset";
  static final String HEADER_ORIGINAL_TIMESTAMP = "idem-original-timestamp";

  private final Supplier<ProducerFactory<?, ?>> producers;
  private final BooleanSupplier springKafkaHeaders;
  private volatile @Nullable KafkaTemplate<byte[], byte[]> template;

  /**
   * On the context's {@code ProducerFactory}, looked up at the first dead letter. A factory here, not a
   * lambda in {@link IdempotentListenerPostProcessor}: a lambda there naming this library's types
   * would fail that class's introspection when the library is not on the classpath.
   */
  static KafkaDeliveries of(BeanFactory beans) {
    return new KafkaDeliveries(() -> beans.getBean(ProducerFactory.class),
        () -> beans.getBean(IdemProperties.class).getDeadLetter().isSpringKafkaHeaders());
  }

  KafkaDeliveries(Supplier<ProducerFactory<?, ?>> producers, BooleanSupplier springKafkaHeaders) {
    this.producers = producers;
    this.springKafkaHeaders = springKafkaHeaders;
  }

  @Override
  public String kind() {
    return "kafka";
  }

  @Override
  public boolean isListener(Method method) {
    return MergedAnnotations.from(method, MergedAnnotations.SearchStrategy.TYPE_HIERARCHY).isPresent(KafkaListener.class)
        || (MergedAnnotations.from(method).isPresent(KafkaHandler.class)
            && MergedAnnotations.from(method.getDeclaringClass(), MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
                .isPresent(KafkaListener.class));
  }

  @Override
  public boolean accepts(Method method, Class<?> type) {
    return ConsumerRecord.class.isAssignableFrom(type);
  }

  @Override
  public boolean acknowledgesByItself(Class<?> type) {
    return Acknowledgment.class.isAssignableFrom(type) || Consumer.class.isAssignableFrom(type);
  }

  @Override
  public boolean retriesInCall() {
    return true;
  }

  @Override
  public @Nullable Object invokeBatch(IdempotentListenerInterceptor.BatchCall call) throws Throwable {
    return new KafkaBatchInvocation(this, call).run();
  }

  @Override
  public String deliveryId(Object message) {
    ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) message;
    return record.topic() + "-" + record.partition() + "@" + record.offset();
  }

  @Override
  public InboundMessage toInbound(Object message, int attempt, boolean unaccounted) {
    ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) message;
    InboundMessage.Builder builder = InboundMessage.builder(record.topic(), bytes(record.value(), "value"))
        .brokerMessageId(deliveryId(record))
        .deliveryAttempt(attempt)
        .unaccountedRedelivery(unaccounted)
        .receivedAt(Instant.now())
        .nativeMessage(record);
    for (Header header : record.headers()) {
      String value = utf8(header.value());
      if (value == null) {
        builder.undecodableHeader(header.key());
      } else {
        builder.header(header.key(), value);
      }
    }
    return builder.build();
  }

  @Override
  public void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination) {
    ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) message;
    String topic = destination != null ? destination : record.topic() + DEAD_LETTER_SUFFIX;
    ProducerRecord<byte[], byte[]> copy = new ProducerRecord<>(topic, null,
        record.key() == null ? null : bytes(record.key(), "key"), bytes(record.value(), "value"));
    for (Header header : record.headers()) {
      copy.headers().add(header);
    }
    for (Map.Entry<String, String> header : reason.toHeaders().entrySet()) {
      replace(copy.headers(), header.getKey(), utf8(header.getValue()));
    }
    replace(copy.headers(), HEADER_ORIGINAL_TOPIC, utf8(record.topic()));
    replace(copy.headers(), HEADER_ORIGINAL_PARTITION, utf8(Integer.toString(record.partition())));
    replace(copy.headers(), HEADER_ORIGINAL_OFFSET, utf8(Long.toString(record.offset())));
    replace(copy.headers(), HEADER_ORIGINAL_TIMESTAMP, utf8(Long.toString(record.timestamp())));
    if (springKafkaHeaders.getAsBoolean()) {
      addSpringKafkaHeaders(copy.headers(), record, reason);
    }
    try {
      template().send(copy).get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while dead-lettering to " + topic, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("could not dead-letter " + deliveryId(record) + " to topic "
          + topic + ": " + e.getMessage(), e);
    }
  }

  /**
   * Spring Kafka's {@code DeadLetterPublishingRecoverer} headers, with its encodings (partition a
   * 4-byte and offset and timestamp 8-byte big-endian numbers, the rest UTF-8), so that tooling
   * written for Spring Kafka's DLTs reads Idem's. The exception is the handler's when there was
   * one; for Idem's own reasons (no key, a conflict) {@link IdempotencyException} with the cause.
   */
  static void addSpringKafkaHeaders(Headers headers, ConsumerRecord<?, ?> record, DeadLetterReason reason) {
    replace(headers, KafkaHeaders.DLT_ORIGINAL_TOPIC, utf8(record.topic()));
    replace(headers, KafkaHeaders.DLT_ORIGINAL_PARTITION,
        ByteBuffer.allocate(Integer.BYTES).putInt(record.partition()).array());
    replace(headers, KafkaHeaders.DLT_ORIGINAL_OFFSET, ByteBuffer.allocate(Long.BYTES).putLong(record.offset()).array());
    replace(headers, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP,
        ByteBuffer.allocate(Long.BYTES).putLong(record.timestamp()).array());
    replace(headers, KafkaHeaders.DLT_ORIGINAL_TIMESTAMP_TYPE, utf8(record.timestampType().toString()));
    String group = KafkaUtils.getConsumerGroupId();
    if (group != null) {
      replace(headers, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP, utf8(group));
    }
    String exception = reason.exceptionClass() != null ? reason.exceptionClass() : IdempotencyException.class.getName();
    replace(headers, KafkaHeaders.DLT_EXCEPTION_FQCN, utf8(exception));
    String text = reason.cause() + ": " + reason.detail();
    replace(headers, KafkaHeaders.DLT_EXCEPTION_MESSAGE, utf8(text));
    replace(headers, KafkaHeaders.DLT_EXCEPTION_STACKTRACE, utf8(exception + ": " + text));
  }

  private static void replace(Headers headers, String name, byte[] value) {
    headers.remove(name);
    headers.add(name, value);
  }

  private KafkaTemplate<byte[], byte[]> template() {
    KafkaTemplate<byte[], byte[]> current = template;
    if (current == null) {
      synchronized (this) {
        current = template;
        if (current == null) {
          @SuppressWarnings("unchecked")
          ProducerFactory<byte[], byte[]> factory = (ProducerFactory<byte[], byte[]>) producers.get();
          current = new KafkaTemplate<>(factory, Map.of(
              ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
              ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
          template = current;
        }
      }
    }
    return current;
  }

  static byte[] bytes(@Nullable Object value, String what) {
    if (value == null) {
      return new byte[0];
    }
    if (value instanceof byte[] bytes) {
      return bytes;
    }
    if (value instanceof String text) {
      return text.getBytes(StandardCharsets.UTF_8);
    }
    if (value instanceof org.apache.kafka.common.utils.Bytes bytes) {
      return bytes.get();
    }
    throw new IllegalStateException("an @Idempotent @KafkaListener needs the record's " + what
        + " as String or byte[] (StringDeserializer or ByteArrayDeserializer; convert to a POJO"
        + " with a message converter, not a deserializer), but it was a "
        + value.getClass().getName() + ": Idem fingerprints and dead-letters the bytes");
  }

  private static byte[] utf8(String value) {
    return value.getBytes(StandardCharsets.UTF_8);
  }

  private static @Nullable String utf8(byte @Nullable [] value) {
    return value == null ? "" : Utf8.decodeStrict(value);
  }
}
