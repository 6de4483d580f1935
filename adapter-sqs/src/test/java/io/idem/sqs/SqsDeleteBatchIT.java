package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.Message;

/** DeleteMessageBatch results are read entry by entry: a refused entry is not counted as deleted. */
class SqsDeleteBatchIT extends SqsTestBase {

  @Test
  void aRefusedEntryIsReportedAndItsMessageStays() {
    SqsHarness queue = queue(false);
    publish(queue, "ok", "{}");
    publish(queue, "refused", "{}");
    List<Message> received = new ArrayList<>();
    while (received.size() < 2) {
      received.addAll(queue.client().receiveMessage(b -> b.queueUrl(queue.queueUrl())
          .maxNumberOfMessages(10).waitTimeSeconds(1).visibilityTimeout(30)
          .messageAttributeNames("All")).messages());
    }
    VisibilityKeeper keeper = new VisibilityKeeper(queue.client(), queue.queueUrl(), Duration.ofSeconds(30), 0.5,
        new AttemptLedger());
    DeleteBatcher deletes = new DeleteBatcher(queue.client(), queue.queueUrl(), Duration.ofSeconds(10), keeper, false);
    for (Message message : received) {
      boolean refuse = "refused".equals(message.messageAttributes().get("idempotency-key").stringValue());
      // a receipt handle SQS does not know, as a stale handle would be after a redelivery
      Message delivered = refuse ? message.toBuilder().receiptHandle(message.receiptHandle() + "-stale").build() : message;
      Delivery delivery = new Delivery(SqsInboundMessage.of(queue.destination(), delivered, Instant.now()), 1,
          System.nanoTime() + Duration.ofSeconds(30).toNanos());
      keeper.hold(delivery);
      deletes.delete(delivery);
    }
    assertThat(deletes.pendingCount()).isEqualTo(2);

    deletes.flush();

    assertThat(deletes.deletedCount()).isEqualTo(1);
    assertThat(deletes.failedCount()).isEqualTo(1);
    assertThat(deletes.pendingCount()).isZero();
    assertThat(keeper.heldCount()).isZero();
    assertThat(queue.pendingCount()).isEqualTo(1); // the refused one is still there, in flight
  }
}
