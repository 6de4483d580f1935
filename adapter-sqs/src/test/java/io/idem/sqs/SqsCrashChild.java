package io.idem.sqs;

import io.idem.IdempotentConsumer;
import io.idem.NonRetryableException;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.net.URI;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * The victim of {@link SqsCrashIT}: a consumer in its own JVM with a {@link CrashInjector} that
 * halts it at {@code -Didem.crash.point} (none: it runs until the parent kills it), on an {@link
 * InterceptedSqsClient} that places DURING_ACK inside DeleteMessage / DeleteMessageBatch and
 * DEAD_LETTER_COPY_STORED inside the dead-letter SendMessage (run with {@code
 * -Didem.crash.broker-calls=intercepted}). Arguments: queue URL, dead-letter queue URL, consumer
 * group, delete batch window in ms, and optionally {@code maxBatchSize} (default 1). {@code
 * -Didem.test.handler-delay-ms} makes each handler run take that long (simulated work, so that a
 * kill lands mid-stream). A message with the header {@code x-fail} fails its handler with a
 * {@link NonRetryableException} (dead-lettered at once, its decision recorded first). Database from {@code -Didem.test.jdbc.*}; SQS from
 * {@code IDEM_SQS_ENDPOINT}.
 */
public final class SqsCrashChild {
  private SqsCrashChild() {}

  public static void main(String[] args) throws Exception {
    TestDatabase db = TestDatabase.attach(
        System.getProperty("idem.test.jdbc.url"),
        System.getProperty("idem.test.jdbc.user"),
        System.getProperty("idem.test.jdbc.password", ""),
        System.getProperty("idem.test.jdbc.schema"));
    long delay = Long.getLong("idem.test.handler-delay-ms", 0);
    CrashInjector crashes = CrashInjector.fromSystemProperties();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(args[2])
        .handler((message, session) -> {
          if (message.header("x-fail") != null) {
            throw new NonRetryableException("poison " + SqsTestBase.key(message));
          }
          SqsTestBase.work(Duration.ofMillis(delay));
          TestDatabase.record(session, SqsTestBase.key(message), message.payload());
        })
        .listener(crashes)
        .build();
    SqsConsumerConfig config = SqsConsumerConfig.builder(args[0])
        .deadLetterQueueUrl(args[1])
        .deleteBatchWindow(Duration.ofMillis(Long.parseLong(args[3])))
        .maxBatchSize(args.length > 4 ? Integer.parseInt(args[4]) : 1)
        .waitTime(Duration.ofSeconds(1))
        .visibilityTimeout(SqsCrashIT.VISIBILITY)
        .endpoint(URI.create(System.getenv("IDEM_SQS_ENDPOINT")))
        .region("us-east-1")
        .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
        .build();
    SqsClient real = SqsClient.builder()
        .endpointOverride(URI.create(System.getenv("IDEM_SQS_ENDPOINT")))
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
        .build();
    // the crash points inside broker calls: the call was performed, the JVM halts before it
    // returns to the adapter (the broker settled or stored, the adapter never learned it)
    SqsClient sqs = InterceptedSqsClient.of(real, (method, arguments, forward) -> {
      Object result = forward.call();
      switch (method) {
        case "deleteMessage", "deleteMessageBatch" -> crashes.atBrokerOperation(CrashPoint.DURING_ACK, method);
        case "sendMessage" -> crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, method);
        default -> { }
      }
      return result;
    });
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline, sqs);
    consumer.start();
    System.out.println("CHILD-STARTED");
    Thread.sleep(Duration.ofMinutes(5).toMillis()); // the crash injector ends this JVM
    consumer.close();
    System.exit(3);
  }
}
