package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import java.net.URI;
import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * The adapter kit's crash matrix consumer ({@link SqsAdapterCompatibilityIT}), run in the child
 * JVM: the kit's pipeline on the MyBatis store and an {@link SqsIdempotentConsumer} configured as
 * {@link SqsHarness#config()} configures the kit's own. Properties {@code queue-url}, {@code
 * dlq-url}, {@code endpoint}, {@code region}, {@code max-batch-size}.
 */
public final class SqsCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    SqsConsumerConfig config = SqsConsumerConfig.builder(context.property("queue-url"))
        .deadLetterQueueUrl(context.property("dlq-url"))
        .waitTime(SqsHarness.WAIT_TIME)
        .visibilityTimeout(Duration.ofSeconds(10))
        .shutdownTimeout(Duration.ofSeconds(20))
        .endpoint(URI.create(context.property("endpoint")))
        .region(context.property("region"))
        .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
        .maxBatchSize(Integer.parseInt(context.property("max-batch-size")))
        .build();
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, context.kitPipeline(store));
    consumer.start();
    return consumer;
  }
}
