package io.idem.spring;

import org.springframework.beans.factory.BeanFactory;
import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import io.idem.jms.JmsHeaderNames;
import jakarta.jms.BytesMessage;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.Queue;
import jakarta.jms.TextMessage;
import jakarta.jms.Topic;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Enumeration;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.jms.core.JmsTemplate;

/**
 * {@code @JmsListener} methods; the delivery is the {@link Message} (text or bytes). Properties are read and written with Idem's JMS naming ({@link
 * JmsHeaderNames}: {@code idempotency_key} is the header {@code idempotency-key}). The dead letter is sent with the application's {@link JmsTemplate}
 * to {@code <queue>.dlq} by default; inside a transacted listener session (Spring Boot's default
 * for {@code @JmsListener}) that send joins the session's transaction, so it commits together with
 * the consumption of the original.
 */
final class JmsDeliveries implements ListenerDeliveries {
  static final String DEAD_LETTER_SUFFIX = ".dlq";

  private final Supplier<JmsTemplate> templates;

  /**
   * On the context's {@code JmsTemplate}, looked up at the first dead letter. A factory here, not a
   * lambda in {@link IdempotentListenerPostProcessor}: a lambda there naming this library's types
   * would fail that class's introspection when the library is not on the classpath.
   */
  static JmsDeliveries of(BeanFactory beans) {
    return new JmsDeliveries(() -> beans.getBean(JmsTemplate.class));
  }

  JmsDeliveries(Supplier<JmsTemplate> templates) {
    this.templates = templates;
  }

  @Override
  public String kind() {
    return "jms";
  }

  @Override
  public boolean isListener(java.lang.reflect.Method method) {
    return org.springframework.core.annotation.MergedAnnotations.from(method,
            org.springframework.core.annotation.MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
        .isPresent(org.springframework.jms.annotation.JmsListener.class);
  }

  @Override
  public boolean accepts(java.lang.reflect.Method method, Class<?> type) {
    return Message.class.isAssignableFrom(type);
  }

  /** A {@code Session}: in a transacted session the method could commit it before Idem's commit. */
  @Override
  public boolean acknowledgesByItself(Class<?> type) {
    return jakarta.jms.Session.class.isAssignableFrom(type);
  }

  @Override
  public String deliveryId(Object message) {
    try {
      return String.valueOf(((Message) message).getJMSMessageID());
    } catch (JMSException e) {
      throw new IllegalStateException("could not read the JMS message id: " + e.getMessage(), e);
    }
  }

  /** {@code JMSRedelivered}: the provider may have delivered the message before. */
  @Override
  public boolean deliveredBefore(Object message) {
    try {
      return ((Message) message).getJMSRedelivered();
    } catch (JMSException e) {
      return true; // unknown: counting it costs a round trip, never a wrong outcome
    }
  }

  @Override
  public InboundMessage toInbound(Object message, int attempt, boolean unaccounted) {
    Message jms = (Message) message;
    try {
      InboundMessage.Builder builder = InboundMessage.builder(name(jms.getJMSDestination()), body(jms))
          .brokerMessageId(jms.getJMSMessageID())
          .deliveryAttempt(attempt)
        .unaccountedRedelivery(unaccounted)
          .receivedAt(Instant.now())
          .nativeMessage(jms);
      Enumeration<?> names = jms.getPropertyNames();
      while (names.hasMoreElements()) {
        String name = (String) names.nextElement();
        Object value = jms.getObjectProperty(name);
        if (value != null) {
          builder.header(name, value.toString());
          String alias = JmsHeaderNames.toHeaderName(name);
          if (!alias.equals(name)) {
            builder.header(alias, value.toString());
          }
        }
      }
      return builder.build();
    } catch (JMSException e) {
      throw new IllegalStateException("could not read the JMS message: " + e.getMessage(), e);
    }
  }

  @Override
  public void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination) {
    Message jms = (Message) message;
    String queue;
    byte[] body;
    try {
      queue = destination != null ? destination : name(jms.getJMSDestination()) + DEAD_LETTER_SUFFIX;
      body = body(jms);
    } catch (JMSException e) {
      throw new IllegalStateException("could not read the JMS message: " + e.getMessage(), e);
    }
    templates.get().send(queue, session -> {
      Message copy;
      if (jms instanceof TextMessage) {
        copy = session.createTextMessage(new String(body, StandardCharsets.UTF_8));
      } else {
        BytesMessage bytes = session.createBytesMessage();
        bytes.writeBytes(body);
        copy = bytes;
      }
      Enumeration<?> names = jms.getPropertyNames();
      while (names.hasMoreElements()) {
        String name = (String) names.nextElement();
        if (!name.startsWith("JMSX") && !name.startsWith("_")) {
          copy.setObjectProperty(name, jms.getObjectProperty(name));
        }
      }
      for (var header : reason.toHeaders().entrySet()) {
        copy.setStringProperty(JmsHeaderNames.toPropertyName(header.getKey()), header.getValue());
      }
      return copy;
    });
  }

  private static byte[] body(Message jms) throws JMSException {
    if (jms instanceof TextMessage text) {
      String value = text.getText();
      return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
    }
    if (jms instanceof BytesMessage bytes) {
      byte[] value = bytes.getBody(byte[].class);
      return value == null ? new byte[0] : value;
    }
    throw new IllegalStateException("an @Idempotent @JmsListener needs a TextMessage or"
        + " BytesMessage, but got a " + jms.getClass().getName());
  }

  private static String name(@Nullable Destination destination) throws JMSException {
    if (destination instanceof Queue queue) {
      return queue.getQueueName();
    }
    if (destination instanceof Topic topic) {
      return topic.getTopicName();
    }
    return String.valueOf(destination);
  }
}
