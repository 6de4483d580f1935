package io.idem.benchmarks;

import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The plain SQS consumer: {@code ReceiveMessage} of up to 10 (long poll {@link SqsBench#WAIT_TIME}).
 * Per message: {@code INSERT; COMMIT}, then {@code DeleteMessage} with its receipt handle.
 * Batched: the receive's messages (up to the batch size, at most 10) in one transaction, then one
 * {@code DeleteMessageBatch}.
 */
final class RawSqsConsumer extends RawQueueConsumer {
  private final SqsClient sqs;
  private final String queueUrl;

  RawSqsConsumer(SqsClient sqs, String queueUrl, String queue, BenchDatabase db, Progress progress, boolean batched,
      int batchSize) {
    super(queue, db, progress, batched, batchSize);
    this.sqs = sqs;
    this.queueUrl = queueUrl;
  }

  @Override
  void open() {
    // the client is ready; SQS has no subscription
  }

  @Override
  void receiveAndApply(EffectsWriter effects) throws Exception {
    List<Message> messages = sqs.receiveMessage(b -> b.queueUrl(queueUrl)
        .maxNumberOfMessages(batched ? Math.min(10, batchSize) : 10)
        .waitTimeSeconds((int) SqsBench.WAIT_TIME.toSeconds())
        .messageAttributeNames(OrderStream.KEY_HEADER)).messages();
    if (messages.isEmpty()) {
      return;
    }
    progress.begin();
    if (!batched) {
      for (Message m : messages) {
        long start = System.nanoTime();
        effects.applyOne(orderId(m));
        sqs.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
        progress.settled(1, System.nanoTime() - start);
      }
      return;
    }
    long start = System.nanoTime();
    List<String> ids = new ArrayList<>(messages.size());
    List<DeleteMessageBatchRequestEntry> deletes = new ArrayList<>(messages.size());
    for (Message m : messages) {
      ids.add(orderId(m));
      deletes.add(DeleteMessageBatchRequestEntry.builder().id(Integer.toString(deletes.size()))
          .receiptHandle(m.receiptHandle()).build());
    }
    effects.applyAll(ids);
    DeleteMessageBatchResponse response = sqs.deleteMessageBatch(b -> b.queueUrl(queueUrl).entries(deletes));
    if (!response.failed().isEmpty()) {
      throw new IllegalStateException("SQS refused deletes: " + response.failed());
    }
    progress.settled(messages.size(), System.nanoTime() - start);
  }

  private static String orderId(Message m) {
    return m.messageAttributes().get(OrderStream.KEY_HEADER).stringValue();
  }

  @Override
  void shut() {
    sqs.close();
  }
}
