package io.idem.spring;

import org.springframework.beans.factory.BeanFactory;
import com.rabbitmq.client.Channel;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.InboundMessage;
import java.time.Instant;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.AmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * {@code @RabbitListener} methods; the delivery is Spring AMQP's {@link Message}. The dead letter is published with the application's {@link
 * RabbitTemplate} through the default exchange to {@code <queue>.dlq} by default, body and
 * properties kept, the reason added as headers; with publisher confirms of type {@code SIMPLE} on
 * the template's connection factory it waits for the broker's confirm (10 s), otherwise the
 * publish is fire-and-forget (docs/SPRING-BOOT.md, "Limits").
 */
final class RabbitDeliveries implements ListenerDeliveries {
  static final String DEAD_LETTER_SUFFIX = ".dlq";

  private final Supplier<RabbitTemplate> templates;

  /**
   * On the context's {@code RabbitTemplate}, looked up at the first dead letter. A factory here, not a
   * lambda in {@link IdempotentListenerPostProcessor}: a lambda there naming this library's types
   * would fail that class's introspection when the library is not on the classpath.
   */
  static RabbitDeliveries of(BeanFactory beans) {
    return new RabbitDeliveries(() -> beans.getBean(RabbitTemplate.class));
  }

  RabbitDeliveries(Supplier<RabbitTemplate> templates) {
    this.templates = templates;
  }

  @Override
  public String kind() {
    return "rabbitmq";
  }

  @Override
  public boolean isListener(java.lang.reflect.Method method) {
    return org.springframework.core.annotation.MergedAnnotations.from(method,
            org.springframework.core.annotation.MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
        .isPresent(org.springframework.amqp.rabbit.annotation.RabbitListener.class)
        || (org.springframework.core.annotation.MergedAnnotations.from(method)
                .isPresent(org.springframework.amqp.rabbit.annotation.RabbitHandler.class)
            && org.springframework.core.annotation.MergedAnnotations.from(method.getDeclaringClass(),
                    org.springframework.core.annotation.MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
                .isPresent(org.springframework.amqp.rabbit.annotation.RabbitListener.class));
  }

  @Override
  public boolean accepts(java.lang.reflect.Method method, Class<?> type) {
    return Message.class.isAssignableFrom(type);
  }

  /**
   * Wrapped in Spring AMQP's {@code ImmediateRequeueAmqpException}: the container requeues the
   * message whatever its {@code defaultRequeueRejected} says (Spring AMQP's {@code
   * ContainerUtils.shouldRequeue}), so a container set to drop failed messages cannot drop one
   * Idem hands back.
   */
  @Override
  public RuntimeException handBack(IdempotentRetryException retry) {
    return new org.springframework.amqp.ImmediateRequeueAmqpException(retry.getMessage(), retry);
  }

  @Override
  public boolean acknowledgesByItself(Class<?> type) {
    return Channel.class.isAssignableFrom(type);
  }

  @Override
  public String deliveryId(Object message) {
    MessageProperties properties = ((Message) message).getMessageProperties();
    String id = properties.getMessageId();
    return properties.getConsumerQueue() + "/"
        + (id != null ? id : "sha-" + java.util.Arrays.hashCode(((Message) message).getBody()));
  }

  /** RabbitMQ's {@code redelivered} flag, or a quorum queue's {@code x-delivery-count} above 0. */
  @Override
  public boolean deliveredBefore(Object message) {
    MessageProperties properties = ((Message) message).getMessageProperties();
    if (Boolean.TRUE.equals(properties.getRedelivered())) {
      return true;
    }
    return properties.getHeaders().get("x-delivery-count") instanceof Number n && n.longValue() > 0;
  }

  @Override
  public InboundMessage toInbound(Object message, int attempt, boolean unaccounted) {
    Message amqp = (Message) message;
    MessageProperties properties = amqp.getMessageProperties();
    String queue = properties.getConsumerQueue();
    InboundMessage.Builder builder = InboundMessage.builder(queue == null ? "" : queue,
            amqp.getBody() == null ? new byte[0] : amqp.getBody())
        .brokerMessageId(properties.getMessageId())
        .deliveryAttempt(attempt)
        .unaccountedRedelivery(unaccounted)
        .receivedAt(Instant.now())
        .nativeMessage(amqp);
    for (Map.Entry<String, @Nullable Object> header : properties.getHeaders().entrySet()) {
      Object value = header.getValue();
      if (value instanceof String || value instanceof Number || value instanceof Boolean) {
        builder.header(header.getKey(), value.toString());
      } else if (value != null) {
        builder.undecodableHeader(header.getKey());
      }
    }
    return builder.build();
  }

  @Override
  public void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination) {
    Message amqp = (Message) message;
    MessageProperties properties = amqp.getMessageProperties();
    String queue = destination != null ? destination : properties.getConsumerQueue() + DEAD_LETTER_SUFFIX;
    MessageProperties copied = new MessageProperties();
    copied.setContentType(properties.getContentType());
    copied.setContentEncoding(properties.getContentEncoding());
    copied.setMessageId(properties.getMessageId());
    copied.setCorrelationId(properties.getCorrelationId());
    copied.setDeliveryMode(properties.getDeliveryMode());
    properties.getHeaders().forEach(copied::setHeader);
    reason.toHeaders().forEach(copied::setHeader);
    Message copy = new Message(amqp.getBody(), copied);
    RabbitTemplate template = templates.get();
    // RabbitMQ confirms a publish to a queue that does not exist (the default exchange drops it):
    // without this check the copy would be lost and the original acked. A missing queue fails the
    // dead letter instead: the original is not acknowledged and comes back until the queue exists
    try {
      template.execute(channel -> channel.queueDeclarePassive(queue));
    } catch (AmqpException e) {
      throw new IdempotencyException("dead-letter queue '" + queue + "' does not exist on the broker"
          + " (a passive declare failed: " + e.getMessage() + "); declare it (a Queue bean named '" + queue
          + "', or in the broker) or name another with @Idempotent(deadLetter = …); the message stays"
          + " unacknowledged and is redelivered", e);
    }
    if (template.getConnectionFactory().isSimplePublisherConfirms()) {
      template.invoke(operations -> {
        operations.send("", queue, copy);
        operations.waitForConfirmsOrDie(10_000);
        return null;
      });
    } else {
      template.send("", queue, copy);
    }
  }
}
