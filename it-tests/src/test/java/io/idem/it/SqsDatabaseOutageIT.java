package io.idem.it;

import io.idem.fixtures.SqsFixture;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * {@link DatabaseOutageTestBase} on SQS (the demo's standard queue, visibility timeout 5 s, 4
 * workers). SQS has no connection to keep; what must hold is the consumer's grip on the messages
 * it received: during the cut, longer than the visibility timeout, the in-flight ones stay
 * invisible (the heartbeat) and the visible ones untouched, and after the restore every effect was
 * applied on receive 1 ({@code ApproximateReceiveCount}).
 */
class SqsDatabaseOutageIT extends DatabaseOutageTestBase {

  @Override
  protected String brokerName() {
    return "sqs";
  }

  /** Messages received and not yet deleted (in flight) and never received (visible). */
  @Override
  protected Object heldWhileCut() {
    try (SqsClient sqs = SqsFixture.shared().newClient()) {
      String url = sqs.getQueueUrl(b -> b.queueName(destination)).queueUrl();
      Map<QueueAttributeName, String> a = sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(
          QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
          QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE)).attributes();
      return List.of("visible " + a.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES),
          "in flight " + a.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
    }
  }

  /** SQS keeps no session; the queue is the only thing to compare. */
  @Override
  protected Object brokerSession() {
    return destination;
  }
}
