package io.idem.spring;

import io.awspring.cloud.sqs.annotation.SqsListener;
import io.awspring.cloud.sqs.listener.SqsHeaders;
import io.idem.fixtures.SqsFixture;
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
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.annotation.DirtiesContext;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * {@code @Idempotent} on a Spring Cloud AWS {@code @SqsListener} taking a Spring {@code Message},
 * on the in-JVM ElasticMQ and PostgreSQL: in its default ON_SUCCESS acknowledgement mode the
 * container deletes the message after the method returned, so after Idem's commit; a failed one
 * comes back when its visibility timeout (1 s here) runs out.
 */
@DirtiesContext
@SpringBootTest(classes = SqsDropInIT.App.class, properties = {
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
class SqsDropInIT extends DropInListenerContract {
  static final String QUEUE = "spring-dropin-" + UUID.randomUUID();
  private static SqsClient client;
  private static String queueUrl;
  private static String deadLetterUrl;

  @DynamicPropertySource
  static void sqs(DynamicPropertyRegistry registry) {
    SqsFixture sqs = SqsFixture.shared();
    client = sqs.newClient();
    queueUrl = sqs.createQueue(client, QUEUE, Map.of());
    deadLetterUrl = sqs.createQueue(client, QUEUE + SqsDeliveries.DEAD_LETTER_SUFFIX, Map.of());
    registry.add("spring.cloud.aws.sqs.endpoint", () -> sqs.endpoint().toString());
    registry.add("spring.cloud.aws.region.static", sqs::region);
    registry.add("test.queue", () -> QUEUE);
  }



  @Override
  void send(String key, String body) {
    client.sendMessage(r -> r.queueUrl(queueUrl).messageBody(body).messageAttributes(Map.of(
        "idempotency-key", MessageAttributeValue.builder().dataType("String").stringValue(key).build())));
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, BillingListener.class, DeadLetters.class})
  static class App {
    /** Deletes the queues when the context closes, after the listener containers stopped. */
    @Bean
    DisposableBean deleteQueues() {
      return () -> {
        SqsFixture.shared().deleteQueue(client, queueUrl);
        SqsFixture.shared().deleteQueue(client, deadLetterUrl);
        client.close();
      };
    }
  }

  static class BillingListener {
    @Autowired DropInTestSupport.Payments payments;

    @SqsListener(value = "${test.queue}", messageVisibilitySeconds = "1", pollTimeoutSeconds = "1")
    @Idempotent(consumerGroup = GROUP)
    public void onPayment(Message<String> message) {
      payments.apply(sourceData(message).messageAttributes().get("idempotency-key").stringValue(),
          message.getPayload());
    }
  }

  /** Reads the dead-letter queue, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;

    @SqsListener(value = "${test.queue}" + SqsDeliveries.DEAD_LETTER_SUFFIX, pollTimeoutSeconds = "1")
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
