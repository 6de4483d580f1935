package io.idem.spring;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Spring Boot application of the RabbitMQ drop-in tests, on the local RabbitMQ and
 * PostgreSQL, shared by its test classes (Spring's context cache): {@code @Idempotent
 * @RabbitListener}s taking Spring AMQP's {@code Message}, or a {@code @Payload String} with the
 * key from an {@link IdempotencyKey @IdempotencyKey} {@code @Header} and {@code MessageHeaders};
 * with <b>{@code default-requeue-rejected=false}</b>, under which Spring AMQP rejects a failed
 * message without requeue (RabbitMQ drops it: lost) — Idem's hand-backs are requeued anyway.
 * Backoffs of 200–400 ms, long enough to see that an unsettled delivery is not redelivered hot.
 */
@SpringBootTest(classes = RabbitDropInApp.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=200ms",
    "idem.retry.max-backoff=400ms",
    "idem.retention.enabled=false",
    "spring.rabbitmq.listener.simple.default-requeue-rejected=false",
    "logging.level.org.springframework.amqp.rabbit=ERROR"})
abstract class RabbitDropInApp extends DropInTest {
  static final String RUN = UUID.randomUUID().toString();
  static final String MESSAGES = "spring-dropin-" + RUN;
  static final String TEXTS = "spring-dropin-texts-" + RUN;
  /** A listener's queue whose dead-letter queue ({@code <queue>.dlq}) is not declared. */
  static final String WITHOUT_DLQ = "spring-dropin-nodlq-" + RUN;

  @DynamicPropertySource
  static void rabbit(DynamicPropertyRegistry registry) {
    DropInTestSupport.rabbitProperties().forEach((name, value) -> registry.add(name, () -> value));
    registry.add("test.queue", () -> MESSAGES);
    registry.add("test.texts", () -> TEXTS);
    registry.add("test.queue-without-dlq", () -> WITHOUT_DLQ);
  }

  @Autowired RabbitTemplate template;
  @Autowired DeadLetters deadLetterCopies;

  void send(String queue, String key, String body, boolean keyHeader) {
    MessageProperties properties = new MessageProperties();
    properties.setMessageId(UUID.randomUUID().toString());
    properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
    if (keyHeader) {
      properties.setHeader("idempotency-key", key);
    }
    template.send("", queue, new Message(body.getBytes(StandardCharsets.UTF_8), properties));
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, Listeners.class, DeadLetters.class})
  static class App {
    /** Deleted by the broker when the test's consumers go: nothing left behind. */
    @Bean
    Queue messagesQueue() {
      return new Queue(MESSAGES, false, false, true);
    }

    @Bean
    Queue textsQueue() {
      return new Queue(TEXTS, false, false, true);
    }

    @Bean
    Queue queueWithoutDeadLetterQueue() {
      return new Queue(WITHOUT_DLQ, false, false, true);
    }

    @Bean
    Queue messagesDeadLetterQueue() {
      return new Queue(MESSAGES + RabbitDeliveries.DEAD_LETTER_SUFFIX, false, false, true);
    }

    @Bean
    Queue textsDeadLetterQueue() {
      return new Queue(TEXTS + RabbitDeliveries.DEAD_LETTER_SUFFIX, false, false, true);
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;

    @RabbitListener(queues = "${test.queue}")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(Message message) {
      payments.apply((String) message.getMessageProperties().getHeaders().get("idempotency-key"),
          new String(message.getBody(), StandardCharsets.UTF_8));
    }

    @RabbitListener(queues = "${test.queue-without-dlq}")
    @Idempotent(consumerGroup = GROUP)
    public void onPaymentWithoutDeadLetterQueue(Message message) {
      onPayment(message);
    }

    /** As Spring users write it: the converted body, the key from a header parameter. */
    @RabbitListener(queues = "${test.texts}")
    @Idempotent(consumerGroup = GROUP)
    public void onText(@Payload String body, @Header("idempotency-key") @IdempotencyKey String key,
        MessageHeaders headers) {
      if (headers.get("idempotency-key") == null) {
        throw new AssertionError("MessageHeaders without the key header");
      }
      payments.apply(key, body);
    }
  }

  /** Reads the dead-letter queues, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;
    private final Map<String, Map<String, String>> byMessageId = new ConcurrentHashMap<>();

    @RabbitListener(queues = {"${test.queue}.dlq", "${test.texts}.dlq"})
    public void onDeadLetter(Message message) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      message.getMessageProperties().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
      inbox.received(headers.get("idempotency-key"), headers);
      byMessageId.put(message.getMessageProperties().getMessageId(), headers);
    }

    /** By the copy's {@code message-id} (kept from the original), for copies without a key. */
    Map<String, String> byMessageId(String id) {
      return byMessageId.get(id);
    }
  }
}
