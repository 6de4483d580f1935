package io.idem.spring;

import org.springframework.beans.factory.BeanFactory;
import io.awspring.cloud.sqs.annotation.SqsListener;
import io.awspring.cloud.sqs.listener.SqsHeaders;
import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * Spring Cloud AWS {@code @SqsListener} methods taking a Spring {@code Message} (any payload
 * type): Idem reads the SQS message the container received from its {@code Sqs_SourceData}
 * header — body, message attributes, message id. The container deletes the message after the method returned (its
 * default {@code ON_SUCCESS} acknowledgement mode); {@code ALWAYS} would delete it after a
 * failure too and is refused (on the annotation here, on the container's options by {@link
 * SqsContainers}), as is an {@code Acknowledgement} parameter. The
 * dead letter is sent with the application's {@link SqsAsyncClient} to {@code <queue>-dlq} by
 * default (SQS names allow no dot), body and as many attributes as SQS allows (10, the reason's
 * first), waited for.
 */
final class SqsDeliveries implements ListenerDeliveries {
  static final String DEAD_LETTER_SUFFIX = "-dlq";
  private static final int MAX_ATTRIBUTES = 10;

  private final Supplier<SqsAsyncClient> clients;

  /**
   * On the context's {@code SqsAsyncClient}, looked up at the first dead letter. A factory here, not a
   * lambda in {@link IdempotentListenerPostProcessor}: a lambda there naming this library's types
   * would fail that class's introspection when the library is not on the classpath.
   */
  static SqsDeliveries of(BeanFactory beans) {
    return new SqsDeliveries(() -> beans.getBean(SqsAsyncClient.class));
  }

  SqsDeliveries(Supplier<SqsAsyncClient> clients) {
    this.clients = clients;
  }

  @Override
  public String kind() {
    return "sqs";
  }

  @Override
  public boolean isListener(Method method) {
    return org.springframework.core.annotation.MergedAnnotations.from(method,
            org.springframework.core.annotation.MergedAnnotations.SearchStrategy.TYPE_HIERARCHY)
        .isPresent(SqsListener.class);
  }

  @Override
  public boolean accepts(Method method, Class<?> type) {
    return org.springframework.messaging.Message.class.isAssignableFrom(type)
        && AnnotatedElementUtils.hasAnnotation(method, SqsListener.class);
  }

  @Override
  public boolean acknowledgesByItself(Class<?> type) {
    return io.awspring.cloud.sqs.listener.acknowledgement.Acknowledgement.class.isAssignableFrom(type)
        || io.awspring.cloud.sqs.listener.acknowledgement.BatchAcknowledgement.class.isAssignableFrom(type);
  }

  @Override
  public @Nullable String refusal(Method method) {
    SqsListener listener = AnnotatedElementUtils.findMergedAnnotation(method, SqsListener.class);
    if (listener != null && "ALWAYS".equalsIgnoreCase(listener.acknowledgementMode())) {
      return "acknowledgementMode ALWAYS deletes the message after a failure too, so a retry Idem"
          + " asks for would be lost; use ON_SUCCESS (the default)";
    }
    return null;
  }

  @Override
  public String deliveryId(Object message) {
    Message sqs = source(message);
    return queue(message) + "/" + sqs.messageId();
  }

  /**
   * {@code ApproximateReceiveCount} above 1 (received before); a message without the attribute
   * (the container did not ask for it) counts as a first delivery.
   */
  @Override
  public boolean deliveredBefore(Object message) {
    String count = source(message).attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT);
    try {
      return count != null && Long.parseLong(count.trim()) > 1;
    } catch (NumberFormatException e) {
      return true;
    }
  }

  @Override
  public InboundMessage toInbound(Object message, int attempt, boolean unaccounted) {
    Message sqs = source(message);
    InboundMessage.Builder builder = InboundMessage.builder(queue(message),
            sqs.body() == null ? new byte[0] : sqs.body().getBytes(StandardCharsets.UTF_8))
        .brokerMessageId(sqs.messageId())
        .deliveryAttempt(attempt)
        .unaccountedRedelivery(unaccounted)
        .receivedAt(Instant.now())
        .nativeMessage(sqs);
    sqs.messageAttributes().forEach((name, value) -> {
      if (value.stringValue() != null) {
        builder.header(name, value.stringValue());
      } else {
        builder.undecodableHeader(name);
      }
    });
    return builder.build();
  }

  @Override
  public void deadLetter(Object message, DeadLetterReason reason, @Nullable String destination) {
    Message sqs = source(message);
    String queue = destination != null ? destination : queue(message) + DEAD_LETTER_SUFFIX;
    Map<String, MessageAttributeValue> attributes = new LinkedHashMap<>();
    reason.toHeaders().forEach((name, value) -> attributes.put(name,
        MessageAttributeValue.builder().dataType("String").stringValue(value).build()));
    for (Map.Entry<String, MessageAttributeValue> original : sqs.messageAttributes().entrySet()) {
      if (attributes.size() >= MAX_ATTRIBUTES) {
        break;
      }
      attributes.putIfAbsent(original.getKey(), original.getValue());
    }
    SqsAsyncClient client = clients.get();
    try {
      String url = client.getQueueUrl(r -> r.queueName(queue)).get(30, TimeUnit.SECONDS).queueUrl();
      client.sendMessage(r -> r.queueUrl(url).messageBody(sqs.body()).messageAttributes(attributes))
          .get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while dead-lettering to " + queue, e);
    } catch (Exception e) {
      throw new IllegalStateException("could not dead-letter " + sqs.messageId() + " to queue "
          + queue + ": " + e.getMessage(), e);
    }
  }

  private static Message source(Object message) {
    Object source = ((org.springframework.messaging.Message<?>) message).getHeaders()
        .get(SqsHeaders.SQS_SOURCE_DATA_HEADER);
    if (source instanceof Message sqs) {
      return sqs;
    }
    throw new IllegalStateException("the message has no " + SqsHeaders.SQS_SOURCE_DATA_HEADER
        + " header with the SQS message: is this an @SqsListener of Spring Cloud AWS?");
  }

  private static String queue(Object message) {
    Object name = ((org.springframework.messaging.Message<?>) message).getHeaders()
        .get(SqsHeaders.SQS_QUEUE_NAME_HEADER);
    return name == null ? "" : name.toString();
  }
}
