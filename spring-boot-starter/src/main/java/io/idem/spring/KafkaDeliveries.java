package io.idem.spring;

import org.springframework.beans.factory.BeanFactory;
import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.support.Acknowledgment;

/**
 * {@code @KafkaListener} methods taking a {@link ConsumerRecord}. The dead letter is produced
 * with the application's {@link ProducerFactory} (byte[] serializers) to {@code <topic>.DLT} by
 * default, the record's key, payload and headers kept, and waited for (the producer's
 * acknowledgement, up to 30 s) before the method returns.
 */
final class KafkaDeliveries implements ListenerDeliveries {
  /** Suffix of the default dead-letter topic, as Spring Kafka's and Idem's Kafka adapter's: {@value}. */
  static final String DEAD_LETTER_SUFFIX = ".DLT";

  private final Supplier<ProducerFactory<?, ?>> producers;
  private volatile @Nullable KafkaTemplate<byte[], byte[]> template;

  /**
   * On the context's {@code ProducerFactory}, looked up at the first dead letter. A factory here, not a
   * lambda in {@link IdempotentListenerPostProcessor}: a lambda there naming this library's types
   * would fail that class's introspection when the library is not on the classpath.
   */
  static KafkaDeliveries of(BeanFactory beans) {
    return new KafkaDeliveries(() -> beans.getBean(ProducerFactory.class));
  }

  KafkaDeliveries(Supplier<ProducerFactory<?, ?>> producers) {
    this.producers = producers;
  }

  @Override
  public String kind() {
    return "kafka";
  }

  @Override
  public boolean accepts(java.lang.reflect.Method method, Class<?> type) {
    return ConsumerRecord.class.isAssignableFrom(type);
  }

  @Override
  public boolean acknowledgesByItself(Class<?> type) {
    return Acknowledgment.class.isAssignableFrom(type);
  }

  @Override
  public String deliveryId(Object message) {
    ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) message;
    return record.topic() + "-" + record.partition() + "@" + record.offset();
  }

  @Override
  public int brokerAttempt(Object message) {
    return 0;
  }

  @Override
  public InboundMessage toInbound(Object message, int attempt) {
    ConsumerRecord<?, ?> record = (ConsumerRecord<?, ?>) message;
    InboundMessage.Builder builder = InboundMessage.builder(record.topic(), bytes(record.value(), "value"))
        .brokerMessageId(deliveryId(record))
        .deliveryAttempt(attempt)
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
      copy.headers().remove(header.getKey());
      copy.headers().add(header.getKey(), header.getValue().getBytes(StandardCharsets.UTF_8));
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

  private static byte[] bytes(@Nullable Object value, String what) {
    if (value == null) {
      return new byte[0];
    }
    if (value instanceof byte[] bytes) {
      return bytes;
    }
    if (value instanceof String text) {
      return text.getBytes(StandardCharsets.UTF_8);
    }
    throw new IllegalStateException("an @Idempotent @KafkaListener needs the record's " + what
        + " as String or byte[] (StringDeserializer or ByteArrayDeserializer), but it was a "
        + value.getClass().getName() + ": Idem fingerprints and dead-letters the bytes");
  }

  private static @Nullable String utf8(byte @Nullable [] value) {
    return value == null ? "" : Utf8.decodeStrict(value);
  }
}
