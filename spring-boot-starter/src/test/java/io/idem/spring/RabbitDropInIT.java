package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AmqpAdmin;
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
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @Idempotent} on a {@code @RabbitListener} taking Spring AMQP's {@code Message}, on the
 * local RabbitMQ and PostgreSQL: with Spring Boot's default AcknowledgeMode AUTO the container
 * acks after the method returned, so after Idem's commit, and requeues when it throws.
 */
@SpringBootTest(classes = RabbitDropInIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    // the container logs each redelivery Idem asks for (an IdempotentRetryException) at WARN
    "logging.level.org.springframework.amqp.rabbit=ERROR"})
class RabbitDropInIT extends DropInListenerContract {
  static final String QUEUE = "spring-dropin-" + UUID.randomUUID();
  /** A listener's queue whose dead-letter queue ({@code <queue>.dlq}) is not declared. */
  static final String QUEUE_WITHOUT_DLQ = "spring-dropin-nodlq-" + UUID.randomUUID();

  @DynamicPropertySource
  static void rabbit(DynamicPropertyRegistry registry) {
    DropInTestSupport.rabbitProperties().forEach((name, value) -> registry.add(name, () -> value));
    registry.add("test.queue", () -> QUEUE);
    registry.add("test.queue-without-dlq", () -> QUEUE_WITHOUT_DLQ);
  }

  @Autowired RabbitTemplate template;
  @Autowired AmqpAdmin admin;

  @Override
  void send(String key, String body) {
    MessageProperties properties = new MessageProperties();
    properties.setMessageId(UUID.randomUUID().toString());
    properties.setHeader("idempotency-key", key);
    template.send("", QUEUE, new Message(body.getBytes(StandardCharsets.UTF_8), properties));
  }

  /**
   * RabbitMQ confirms a publish to a queue that does not exist (the default exchange drops it), so
   * a dead letter sent there would be lost with the original acked. Instead the dead letter fails,
   * the original stays unacknowledged and comes back, and once the queue exists the copy is in it.
   */
  @Test
  void aDeadLetterToAMissingQueueKeepsTheMessageUntilTheQueueExists() {
    String key = "k-" + UUID.randomUUID();
    String deadLetterQueue = QUEUE_WITHOUT_DLQ + RabbitDeliveries.DEAD_LETTER_SUFFIX;
    MessageProperties properties = new MessageProperties();
    properties.setMessageId(UUID.randomUUID().toString());
    properties.setHeader("idempotency-key", key);
    template.send("", QUEUE_WITHOUT_DLQ, new Message("poison 40".getBytes(StandardCharsets.UTF_8), properties));

    await().atMost(DropInTestSupport.WAIT).until(() -> !outcomes.failedAcknowledgements(key).isEmpty());
    assertThat(outcomes.failedAcknowledgements(key).get(0)).hasMessageContaining(deadLetterQueue)
        .hasMessageContaining("does not exist");
    assertThat(outcomes.of(key)).doesNotContain(ProcessingOutcome.DEAD_LETTERED);
    try {
      admin.declareQueue(new Queue(deadLetterQueue, false, false, false));
      await().atMost(DropInTestSupport.WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DEAD_LETTERED));
      Message copy = template.receive(deadLetterQueue, DropInTestSupport.WAIT.toMillis());
      assertThat(copy).as("the dead-letter copy, once its queue exists").isNotNull();
      assertThat(copy.getMessageProperties().<String>getHeader("idempotency-key")).isEqualTo(key);
      assertThat(payments.runs(key)).as("the handler ran only for its attempts").isEqualTo(DropInTestSupport.MAX_ATTEMPTS);
    } finally {
      admin.deleteQueue(deadLetterQueue);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, BillingListener.class, DeadLetters.class})
  static class App {
    /** Deleted by the broker when the test's consumers go: nothing left behind. */
    @Bean
    Queue billingQueue() {
      return new Queue(QUEUE, false, false, true);
    }

    @Bean
    Queue queueWithoutDeadLetterQueue() {
      return new Queue(QUEUE_WITHOUT_DLQ, false, false, true);
    }

    @Bean
    Queue deadLetterQueue() {
      return new Queue(QUEUE + RabbitDeliveries.DEAD_LETTER_SUFFIX, false, false, true);
    }
  }

  static class BillingListener {
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
  }

  /** Reads the dead-letter queue, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @RabbitListener(queues = "${test.queue}.dlq")
    public void onDeadLetter(Message message) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      message.getMessageProperties().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
      inbox.received(headers.get("idempotency-key"), headers);
    }
  }
}
