package io.idem.spring;

import io.awspring.cloud.sqs.annotation.SqsListener;
import io.awspring.cloud.sqs.config.SqsMessageListenerContainerFactory;
import io.awspring.cloud.sqs.listener.SqsHeaders;
import io.awspring.cloud.sqs.listener.errorhandler.ErrorHandler;
import io.idem.fixtures.SqsFixture;
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
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * The Spring Boot application of the SQS drop-in tests, on the in-JVM ElasticMQ and PostgreSQL,
 * shared by its test classes (Spring's context cache): Spring Cloud AWS {@code @Idempotent
 * @SqsListener}s taking a Spring {@code Message}, or a {@code @Payload} POJO with the key from
 * the JSON ({@code keyJsonPointer}). The container factory has an <b>error handler that completes
 * normally</b>, under which Spring Cloud AWS deletes a failed message (lost: no effect, no dead
 * letter) — Idem's hand-backs never reach it, so the message comes back when its visibility
 * timeout (3 s, longer than the container's 1 s acknowledgement interval, so that a delete would
 * land before the redelivery) runs out.
 */
@SpringBootTest(classes = SqsDropInApp.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=3",
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=50ms",
    "idem.retention.enabled=false",
    // the container logs each redelivery Idem asks for (an IdempotentRetryException) at ERROR
    "logging.level.io.awspring.cloud.sqs.listener.sink=OFF",
    "spring.cloud.aws.sqs.enabled=true",
    "spring.cloud.aws.credentials.access-key=idem",
    "spring.cloud.aws.credentials.secret-key=idem"})
abstract class SqsDropInApp extends DropInTest {
  static final String RUN = UUID.randomUUID().toString();
  static final String MESSAGES = "spring-dropin-" + RUN;
  static final String POJOS = "spring-dropin-pojos-" + RUN;
  private static SqsClient client;
  private static final Map<String, String> URLS = new ConcurrentHashMap<>();

  @DynamicPropertySource
  static void sqs(DynamicPropertyRegistry registry) {
    SqsFixture sqs = SqsFixture.shared();
    client = sqs.newClient();
    for (String queue : List.of(MESSAGES, POJOS)) {
      URLS.put(queue, sqs.createQueue(client, queue, Map.of()));
      URLS.put(queue + SqsDeliveries.DEAD_LETTER_SUFFIX,
          sqs.createQueue(client, queue + SqsDeliveries.DEAD_LETTER_SUFFIX, Map.of()));
    }
    registry.add("spring.cloud.aws.sqs.endpoint", () -> sqs.endpoint().toString());
    registry.add("spring.cloud.aws.region.static", sqs::region);
    registry.add("test.queue", () -> MESSAGES);
    registry.add("test.pojos", () -> POJOS);
  }

  void send(String queue, String key, String body, boolean keyAttribute) {
    client.sendMessage(r -> {
      r.queueUrl(URLS.get(queue)).messageBody(body);
      if (keyAttribute) {
        r.messageAttributes(Map.of("idempotency-key",
            MessageAttributeValue.builder().dataType("String").stringValue(key).build()));
      }
    });
  }

  /** A payment as JSON, for the POJO listener. */
  static String json(String key, String note) {
    return "{\"id\":\"" + key + "\",\"note\":\"" + note + "\"}";
  }

  /** The POJO the listener's {@code @Payload} is converted to. */
  public record Payment(String id, String note) {}

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, Listeners.class, DeadLetters.class})
  static class App {
    /** An error handler that swallows failures: Spring Cloud AWS then deletes the message. */
    @Bean
    SqsMessageListenerContainerFactory<Object> defaultSqsListenerContainerFactory(SqsAsyncClient sqs) {
      return SqsMessageListenerContainerFactory.builder()
          .sqsAsyncClient(sqs)
          .errorHandler(new ErrorHandler<Object>() {
            @Override
            public void handle(Message<Object> message, Throwable t) {
              // handled: the application does not want failed messages back
            }
          })
          .build();
    }

    /** Deletes the queues when the (cached) context closes, after the listener containers stopped. */
    @Bean
    DisposableBean deleteQueues() {
      return () -> {
        URLS.values().forEach(url -> SqsFixture.shared().deleteQueue(client, url));
        client.close();
      };
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;

    @SqsListener(value = "${test.queue}", messageVisibilitySeconds = "3", pollTimeoutSeconds = "1")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(Message<String> message) {
      payments.apply(sourceData(message).messageAttributes().get("idempotency-key").stringValue(),
          message.getPayload());
    }

    /** As Spring users write it: a POJO from the JSON body, the key a field of it. */
    @SqsListener(value = "${test.pojos}", messageVisibilitySeconds = "3", pollTimeoutSeconds = "1")
    @Idempotent(consumerGroup = GROUP, keyJsonPointer = "/id")
    public void onPojo(@Payload Payment payment) {
      payments.apply(payment.id(), payment.note());
    }
  }

  /** Reads the dead-letter queues, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @SqsListener(value = {"${test.queue}" + SqsDeliveries.DEAD_LETTER_SUFFIX,
        "${test.pojos}" + SqsDeliveries.DEAD_LETTER_SUFFIX}, pollTimeoutSeconds = "1")
    public void onDeadLetter(Message<String> message) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      sourceData(message).messageAttributes().forEach((k, v) -> headers.put(k, v.stringValue()));
      inbox.received(headers.get("idem-idempotency-key"), headers);
    }
  }

  static software.amazon.awssdk.services.sqs.model.Message sourceData(Message<?> message) {
    return (software.amazon.awssdk.services.sqs.model.Message)
        message.getHeaders().get(SqsHeaders.SQS_SOURCE_DATA_HEADER);
  }
}
