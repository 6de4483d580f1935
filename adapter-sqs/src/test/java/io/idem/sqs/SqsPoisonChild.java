package io.idem.sqs;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * {@link SqsProcessKillingMessageIT}'s consumer, run in a child JVM: consumes queue URL {@code
 * args[0]} (dead letters to {@code args[1]}) for consumer group {@code args[2]} with maxAttempts
 * {@value #MAX_ATTEMPTS}, {@code maxBatchSize} {@code args[5]} and delete batch window {@code
 * args[6]} ms, until file {@code args[3]} exists. The handler of key {@code args[4]} kills the
 * process: {@code args[7]} {@code HALT} calls {@code Runtime.halt(1)} (like kill -9: no finally, no
 * delete, no hand-back); {@code OOM} throws an OutOfMemoryError, which stops the consumer while the
 * JVM lives on — this child then closes it and starts a new one on the same queue, as an
 * application watching {@code isRunning()} would. The others write one effect row. Prints {@code
 * POISON-RUN}, {@code READY}, {@code RESTART} and {@code OUTCOME <key> <outcome>}.
 * Database from {@code -Didem.test.jdbc.*}; SQS (the parent's in-process ElasticMQ, which outlives
 * this JVM) from {@code IDEM_SQS_ENDPOINT}.
 */
public final class SqsPoisonChild {
  static final int MAX_ATTEMPTS = 3;
  /** Short, so that what a dead child held reappears soon. */
  static final Duration VISIBILITY = Duration.ofSeconds(2);

  private SqsPoisonChild() {}

  public static void main(String[] args) throws Exception {
    TestDatabase db = TestDatabase.attach(
        System.getProperty("idem.test.jdbc.url"),
        System.getProperty("idem.test.jdbc.user"),
        System.getProperty("idem.test.jdbc.password", ""),
        System.getProperty("idem.test.jdbc.schema"));
    Path stopFile = Path.of(args[3]);
    String poison = args[4];
    boolean halt = "HALT".equals(args[7]);
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(args[2])
        .handler((message, session) -> {
          String key = SqsTestBase.key(message);
          if (poison.equals(key)) {
            System.out.println("POISON-RUN");
            System.out.flush();
            if (halt) {
              Runtime.getRuntime().halt(1);
            }
            throw new OutOfMemoryError("simulated: the handler of " + poison + " ran out of memory");
          }
          TestDatabase.record(session, key, message.payload());
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS)
            .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).build())
        .listener(new IdempotencyListener() {
          @Override
          public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
              ProcessingOutcome outcome, Duration elapsed) {
            System.out.println("OUTCOME " + (key == null ? "-" : key.value()) + " " + outcome);
          }
        })
        .build();
    URI endpoint = URI.create(System.getenv("IDEM_SQS_ENDPOINT"));
    SqsConsumerConfig config = SqsConsumerConfig.builder(args[0])
        .deadLetterQueueUrl(args[1])
        .maxBatchSize(Integer.parseInt(args[5]))
        .deleteBatchWindow(Duration.ofMillis(Long.parseLong(args[6])))
        .waitTime(Duration.ofSeconds(1))
        .visibilityTimeout(VISIBILITY)
        .shutdownTimeout(Duration.ofSeconds(20))
        .endpoint(endpoint)
        .region("us-east-1")
        .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
        .build();
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline);
    try {
      consumer.start();
      System.out.println("READY");
      while (!Files.exists(stopFile)) {
        if (!consumer.isRunning()) { // an Error stopped it: replace it, the JVM lives on
          consumer.close();
          System.out.println("RESTART");
          consumer = SqsIdempotentConsumer.create(config, pipeline);
          consumer.start();
        }
        Thread.sleep(50);
      }
    } finally {
      consumer.close();
      db.close();
    }
    System.out.println("CLOSED");
  }
}
