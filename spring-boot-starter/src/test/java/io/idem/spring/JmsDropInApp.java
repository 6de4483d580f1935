package io.idem.spring;

import io.idem.fixtures.ArtemisFixture;
import io.idem.jms.JmsHeaderNames;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Spring Boot application of the JMS drop-in tests, on the embedded Artemis and PostgreSQL,
 * shared by its test classes (Spring's context cache): {@code @Idempotent @JmsListener}s taking a
 * {@code jakarta.jms.Message}, or a {@code @Payload String} with {@code MessageHeaders} (the key
 * from the {@code idempotency_key} property, Idem's default). Spring Boot's listener containers
 * are transacted by default (no JTA): the session commits after the method returned, after Idem's
 * commit, and the dead-letter send joins that session transaction.
 */
@SpringBootTest(classes = JmsDropInApp.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    "logging.level.org.springframework.jms=ERROR"})
abstract class JmsDropInApp extends DropInTest {
  static final String RUN = UUID.randomUUID().toString();
  static final String MESSAGES = "spring-dropin-" + RUN;
  static final String TEXTS = "spring-dropin-texts-" + RUN;
  static final List<String> QUEUES = List.of(MESSAGES, TEXTS, MESSAGES + JmsDeliveries.DEAD_LETTER_SUFFIX,
      TEXTS + JmsDeliveries.DEAD_LETTER_SUFFIX);

  @DynamicPropertySource
  static void artemis(DynamicPropertyRegistry registry) {
    QUEUES.forEach(ArtemisFixture.shared()::createQueue);
    registry.add("test.queue", () -> MESSAGES);
    registry.add("test.texts", () -> TEXTS);
  }

  @Autowired JmsTemplate template;

  void send(String queue, String key, String body) {
    template.send(queue, session -> {
      TextMessage message = session.createTextMessage(body);
      message.setStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, key);
      return message;
    });
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, Listeners.class, DeadLetters.class})
  static class App {
    @Bean
    ConnectionFactory connectionFactory() {
      return DropInTestSupport.artemisConnectionFactory();
    }

    /** Deletes the queues when the (cached) context closes. */
    @Bean
    DisposableBean deleteQueues() {
      return () -> QUEUES.forEach(ArtemisFixture.shared()::deleteQueue);
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;

    @JmsListener(destination = "${test.queue}")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(Message message) throws JMSException {
      payments.apply(message.getStringProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY),
          ((TextMessage) message).getText());
    }

    /** As Spring users write it: the converted body and the headers; the key is Idem's default. */
    @JmsListener(destination = "${test.texts}")
    @Idempotent(consumerGroup = GROUP)
    public void onText(@Payload String body, MessageHeaders headers) {
      payments.apply((String) headers.get(JmsHeaderNames.DEFAULT_KEY_PROPERTY), body);
    }
  }

  /** Reads the dead-letter queues, as an operator's tool would; names as Idem's headers. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @JmsListener(destination = "${test.queue}.dlq")
    public void onDeadLetter(Message message) throws JMSException {
      record(message);
    }

    @JmsListener(destination = "${test.texts}.dlq")
    public void onTextDeadLetter(Message message) throws JMSException {
      record(message);
    }

    private void record(Message message) throws JMSException {
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
