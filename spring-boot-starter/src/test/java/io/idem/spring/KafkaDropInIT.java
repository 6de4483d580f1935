package io.idem.spring;

import io.idem.fixtures.KafkaFixture;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.KafkaException;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.util.backoff.FixedBackOff;

/**
 * {@code @Idempotent} on a {@code @KafkaListener} taking a {@code ConsumerRecord}, in a Spring
 * Boot application on the in-JVM Kafka broker and PostgreSQL: Spring Kafka's default AckMode
 * (BATCH) commits the offset after the method returned, so after Idem's commit.
 */
@SpringBootTest(classes = KafkaDropInIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    "spring.kafka.consumer.auto-offset-reset=earliest"})
class KafkaDropInIT extends DropInListenerContract {
  static final String TOPIC = "spring-dropin-" + UUID.randomUUID();

  @DynamicPropertySource
  static void kafka(DynamicPropertyRegistry registry) {
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(TOPIC, 1);
    kafka.createTopic(TOPIC + KafkaDeliveries.DEAD_LETTER_SUFFIX, 1);
    registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    registry.add("test.topic", () -> TOPIC);
  }

  @AfterAll
  static void deleteTopics() {
    KafkaFixture.shared().deleteTopic(TOPIC);
    KafkaFixture.shared().deleteTopic(TOPIC + KafkaDeliveries.DEAD_LETTER_SUFFIX);
  }

  @Autowired KafkaTemplate<String, String> template;

  @Override
  void send(String key, String body) {
    ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, key, body);
    record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
    try {
      template.send(record).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("could not send to " + TOPIC, e);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, BillingListener.class, DeadLetters.class})
  static class App {
    /** Spring Kafka redelivers as long as Idem asks; Idem's policy decides when to stop. */
    @Bean
    CommonErrorHandler errorHandler() {
      DefaultErrorHandler handler = new DefaultErrorHandler(new FixedBackOff(0, FixedBackOff.UNLIMITED_ATTEMPTS));
      handler.setLogLevel(KafkaException.Level.DEBUG);
      return handler;
    }
  }

  static class BillingListener {
    @Autowired DropInTestSupport.Payments payments;

    @KafkaListener(topics = "${test.topic}", groupId = "${test.topic}-billing")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(ConsumerRecord<String, String> record) {
      payments.apply(record.key(), record.value());
    }
  }

  /** Reads the dead-letter topic, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @KafkaListener(topics = "${test.topic}.DLT", groupId = "${test.topic}-dlt")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      for (Header header : record.headers()) {
        headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
      }
      inbox.received(record.key(), headers);
    }
  }
}
