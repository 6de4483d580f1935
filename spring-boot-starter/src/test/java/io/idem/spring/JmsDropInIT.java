package io.idem.spring;

import io.idem.fixtures.ArtemisFixture;
import io.idem.jms.JmsHeaderNames;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.util.Enumeration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @Idempotent} on a {@code @JmsListener} taking a {@code jakarta.jms.Message}, on the
 * embedded Artemis and PostgreSQL: Spring Boot's listener containers are transacted by default
 * (no JTA), so the session commits — the message is acknowledged — after the method returned,
 * after Idem's commit; the dead-letter send joins that session transaction.
 */
@SpringBootTest(classes = JmsDropInIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    // the container logs each redelivery Idem asks for (an IdempotentRetryException) at WARN
    "logging.level.org.springframework.jms=ERROR"})
class JmsDropInIT extends DropInListenerContract {
  static final String QUEUE = "spring-dropin-" + UUID.randomUUID();

  @DynamicPropertySource
  static void artemis(DynamicPropertyRegistry registry) {
    ArtemisFixture.shared().createQueue(QUEUE);
    ArtemisFixture.shared().createQueue(QUEUE + JmsDeliveries.DEAD_LETTER_SUFFIX);
    registry.add("test.queue", () -> QUEUE);
  }

  @AfterAll
  static void deleteQueues() {
    ArtemisFixture.shared().deleteQueue(QUEUE);
    ArtemisFixture.shared().deleteQueue(QUEUE + JmsDeliveries.DEAD_LETTER_SUFFIX);
  }

  @Autowired JmsTemplate template;

  @Override
  void send(String key, String body) {
    template.send(QUEUE, session -> {
      TextMessage message = session.createTextMessage(body);
      message.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, key);
      return message;
    });
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, BillingListener.class, DeadLetters.class})
  static class App {
    @Bean
    ConnectionFactory connectionFactory() {
      return DropInTestSupport.artemisConnectionFactory();
    }
  }

  static class BillingListener {
    @Autowired DropInTestSupport.Payments payments;

    @JmsListener(destination = "${test.queue}")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(Message message) throws JMSException {
      payments.apply(message.getStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY),
          ((TextMessage) message).getText());
    }
  }

  /** Reads the dead-letter queue, as an operator's tool would; names as Idem's headers. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @JmsListener(destination = "${test.queue}.dlq")
    public void onDeadLetter(Message message) throws JMSException {
      Map<String, String> headers = new ConcurrentHashMap<>();
      Enumeration<?> names = message.getPropertyNames();
      while (names.hasMoreElements()) {
        String name = (String) names.nextElement();
        headers.put(JmsHeaderNames.toHeaderName(name), String.valueOf(message.getObjectProperty(name)));
      }
      inbox.received(message.getStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY), headers);
    }
  }
}
