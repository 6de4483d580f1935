package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import io.idem.testkit.CrashPoint;
import java.net.URI;
import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * The adapter kit's crash matrix consumer ({@link SqsCompatibilityKit}), run in the child
 * JVM: the kit's pipeline on the MyBatis store and an {@link SqsIdempotentConsumer} configured as
 * {@link SqsHarness#config()} configures the kit's own, on a standard or FIFO queue, per message or
 * in batches. Properties {@code queue-url}, {@code dlq-url}, {@code endpoint}, {@code region},
 * {@code max-batch-size} (a number, or {@code default}: the builder's default, batch mode). Its
 * client ({@link InterceptedSqsClient}) calls {@link CrashInjector#atBrokerOperation} with
 * DURING_ACK once a {@code DeleteMessage} or {@code DeleteMessageBatch} was answered (also a batch
 * flushed later), and with DEAD_LETTER_COPY_STORED once a {@code SendMessage} to the dead-letter
 * queue was (the copy stored, the original not deleted).
 */
public final class SqsCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    URI endpoint = URI.create(context.property("endpoint"));
    StaticCredentialsProvider credentials =
        StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem"));
    String deadLetterQueue = context.property("dlq-url");
    SqsConsumerConfig.Builder config = SqsConsumerConfig.builder(context.property("queue-url"))
        .deadLetterQueueUrl(deadLetterQueue)
        .waitTime(SqsHarness.WAIT_TIME)
        .visibilityTimeout(Duration.ofSeconds(10))
        .shutdownTimeout(Duration.ofSeconds(20))
        .endpoint(endpoint)
        .region(context.property("region"))
        .credentials(credentials);
    String maxBatchSize = context.property("max-batch-size");
    if (!maxBatchSize.equals("default")) {
      config.maxBatchSize(Integer.parseInt(maxBatchSize));
    }
    SqsClient real = SqsClient.builder().endpointOverride(endpoint)
        .region(Region.of(context.property("region"))).credentialsProvider(credentials).build();
    CrashInjector crashes = context.crashInjector();
    SqsClient client = InterceptedSqsClient.of(real, (method, arguments, forward) -> {
      Object answer = forward.call();
      if (method.startsWith("deleteMessage")) {
        crashes.atBrokerOperation(CrashPoint.DURING_ACK, method);
      } else if (method.equals("sendMessage") && arguments[0] instanceof SendMessageRequest copy
          && deadLetterQueue.equals(copy.queueUrl())) {
        crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, method);
      }
      return answer;
    });
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config.build(), context.kitPipeline(store), client);
    consumer.start();
    return consumer;
  }
}
