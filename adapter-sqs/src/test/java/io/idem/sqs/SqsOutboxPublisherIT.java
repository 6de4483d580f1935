package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.InboundMessage;
import io.idem.fixtures.SqsFixture;
import io.idem.spi.OutboxPublisher;
import io.idem.testkit.OutboxPublisherCompatibilityKit;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/**
 * SqsOutboxPublisher on ElasticMQ (or the configured SQS), to a FIFO queue: the key is the
 * MessageDeduplicationId, so SQS itself drops the repeat; the ordering key is the group.
 */
class SqsOutboxPublisherIT extends OutboxPublisherCompatibilityKit {
  private static final SqsClient SQS = SqsFixture.shared().newClient();

  @AfterAll
  static void closeClient() {
    SQS.close();
  }

  @Override
  protected OutboxPublisher newPublisher() {
    return SqsOutboxPublisher.create(SQS);
  }

  @Override
  protected String newDestination(String name) {
    return SqsFixture.shared().createQueue(SQS, name + ".fifo", Map.of());
  }

  @Override
  protected void deleteDestination(String queueUrl) {
    SqsFixture.shared().deleteQueue(SQS, queueUrl);
  }

  @Override
  protected boolean deduplicatesByKey() {
    return true;
  }

  @Override
  protected List<InboundMessage> receive(String queueUrl, int count, Duration timeout) {
    List<InboundMessage> received = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (received.size() < count && System.nanoTime() < deadline) {
      List<Message> batch = SQS.receiveMessage(b -> b.queueUrl(queueUrl).maxNumberOfMessages(10)
          .waitTimeSeconds(1).messageAttributeNames("All")
          .messageSystemAttributeNames(MessageSystemAttributeName.ALL)).messages();
      for (Message m : batch) {
        received.add(SqsInboundMessage.of(queueUrl, m, Instant.now()));
        SQS.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
      }
    }
    return received;
  }

  @Test
  void aKeySqsWouldRefuseAsADeduplicationIdIsHashed() {
    assertThat(SqsOutboxPublisher.deduplicationId("order-1:receipt")).isEqualTo("order-1:receipt");
    assertThat(SqsOutboxPublisher.deduplicationId("commande é")).hasSize(64).isNotEqualTo("commande é");
    assertThat(SqsOutboxPublisher.deduplicationId("x".repeat(129))).hasSize(64);
  }
}
