package io.idem.examples;

import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;
import java.net.URI;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * Consumes an SQS queue (standard or FIFO) idempotently: {@code DeleteMessage} with the current
 * receipt handle only after the PostgreSQL transaction committed; dead letters are sent to the
 * given queue. Producers put the business id in the {@code idempotency-key} message attribute.
 * On AWS, region and credentials come from the AWS SDK's default chains; a local SQS (ElasticMQ,
 * LocalStack) has neither, so for an {@code endpoint} the consumer is given a region and static
 * credentials too (without them the SDK fails with "Unable to load region").
 *
 * <p>{@code java [-Dsqs.endpoint=http://localhost:9324] io.idem.examples.SqsQuickStart <queue-url>
 * <dlq-url> [jdbc-url] [user] [password]}
 */
public final class SqsQuickStart {
  private SqsQuickStart() {}

  /** Builds the pipeline and starts consuming on AWS; close the consumer to stop. */
  public static SqsIdempotentConsumer start(String queueUrl, String dlqUrl, DataSource dataSource) {
    return start(queueUrl, dlqUrl, null, dataSource);
  }

  /**
   * Builds the pipeline and starts consuming, on a local SQS at {@code endpoint} (such as
   * ElasticMQ's {@code http://localhost:9324}) or, when it is {@code null}, on AWS; close the
   * consumer to stop.
   */
  public static SqsIdempotentConsumer start(
      String queueUrl, String dlqUrl, @Nullable URI endpoint, DataSource dataSource) {
    var pipeline = Billing.pipeline(Billing.sqlSessionFactory(dataSource));
    // README: begin
    SqsConsumerConfig.Builder config = SqsConsumerConfig.builder(queueUrl) // standard or FIFO; .maxBatchSize(1): per message
        .deadLetterQueueUrl(dlqUrl);                                      // or the queue's RedrivePolicy
    if (endpoint != null) {     // a local SQS (ElasticMQ, LocalStack): no AWS region or credentials chain
      config.endpoint(endpoint).region("us-east-1")
          .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("local", "local")));
    }
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config.build(), pipeline);
    consumer.start();   // per receive of up to 10 (FIFO: per message group): one COMMIT, one DeleteMessageBatch; failures redone alone
    // README: end
    return consumer;
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length < 2) {
      System.err.println("usage: SqsQuickStart <queue-url> <dlq-url> [jdbc-url] [user] [password]"
          + " (-Dsqs.endpoint=http://localhost:9324 for a local SQS)");
      System.exit(2);
    }
    String endpoint = System.getProperty("sqs.endpoint");
    Billing.runUntilShutdown(start(args[0], args[1], endpoint == null ? null : URI.create(endpoint),
        Billing.dataSource(args, 2)));
  }
}
