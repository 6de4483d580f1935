package io.idem.examples;

import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;
import javax.sql.DataSource;

/**
 * Consumes an SQS queue (standard or FIFO) idempotently: {@code DeleteMessage} with the current
 * receipt handle only after the PostgreSQL transaction committed; dead letters are sent to the
 * given queue. Producers put the business id in the {@code idempotency-key} message attribute.
 * Region and credentials come from the AWS SDK's default chains.
 *
 * <p>{@code java io.idem.examples.SqsQuickStart <queue-url> <dlq-url> [jdbc-url] [user] [password]}
 */
public final class SqsQuickStart {
  private SqsQuickStart() {}

  /** Builds the pipeline and starts consuming; close the consumer to stop. */
  public static SqsIdempotentConsumer start(String queueUrl, String dlqUrl, DataSource dataSource) {
    var pipeline = Billing.pipeline(Billing.sqlSessionFactory(dataSource));
    SqsConsumerConfig config = SqsConsumerConfig.builder(queueUrl)
        .deadLetterQueueUrl(dlqUrl) // or leave it out and rely on the queue's RedrivePolicy
        .build();
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline);
    consumer.start();
    return consumer;
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length < 2) {
      System.err.println("usage: SqsQuickStart <queue-url> <dlq-url> [jdbc-url] [user] [password]");
      System.exit(2);
    }
    Billing.runUntilShutdown(start(args[0], args[1], Billing.dataSource(args, 2)));
  }
}
