package io.idem.sqs;

import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.MessageHandler;
import io.idem.RetryPolicy;
import io.idem.fixtures.SqsFixture;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/** Shared set-up of the SQS-specific integration tests: a fresh schema, queue and consumer group. */
abstract class SqsTestBase {
  static final Duration TIMEOUT = Duration.ofSeconds(60);

  protected final SqsFixture fixture = SqsFixture.shared();
  protected final OutcomeRecorder outcomes = new OutcomeRecorder();
  protected TestDatabase db;
  protected String group;
  protected String run;
  private String testName;
  private final List<SqsHarness> queues = new ArrayList<>();
  private final List<SqsIdempotentConsumer> consumers = new ArrayList<>();
  private final List<SqsClient> clients = new ArrayList<>();

  @BeforeEach
  void setUpBase(TestInfo info) {
    run = UUID.randomUUID().toString().substring(0, 8);
    testName = info.getTestMethod().map(m -> m.getName()).orElse("test")
        .replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase();
    if (testName.length() > 40) {
      testName = testName.substring(0, 40);
    }
    db = TestDatabase.create("sqs_it");
    group = "sqs-it-" + run;
  }

  @AfterEach
  void tearDownBase() {
    Collections.reverse(consumers);
    consumers.forEach(SqsIdempotentConsumer::close);
    clients.forEach(SqsClient::close);
    queues.forEach(SqsHarness::close);
    db.close();
  }

  protected SqsHarness queue(boolean fifo) {
    return queue(fifo, Map.of());
  }

  protected SqsHarness queue(boolean fifo, Map<QueueAttributeName, String> attributes) {
    String name = "it-" + testName + "-" + run + (queues.isEmpty() ? "" : "-" + queues.size());
    SqsHarness harness = new SqsHarness(name, fifo, attributes, b -> b);
    queues.add(harness);
    return harness;
  }

  /** The test pipeline: {@link #outcomes} and then {@code more} as listeners. */
  protected IdempotentConsumer<SqlSession> pipeline(
      MessageHandler<SqlSession> handler, RetryPolicy retries, IdempotencyListener... more) {
    IdempotentConsumer.Builder<SqlSession> builder = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .handler(handler)
        .retryPolicy(retries)
        .listener(outcomes);
    for (IdempotencyListener listener : more) {
      builder.listener(listener);
    }
    return builder.build();
  }

  /** The handler that writes one effect row per call. */
  protected static MessageHandler<SqlSession> recording() {
    return (message, session) -> TestDatabase.record(session, key(message), message.payload());
  }

  protected static String key(io.idem.InboundMessage message) {
    String key = message.header("idempotency-key");
    return key == null ? "(none)" : key;
  }

  protected SqsIdempotentConsumer start(SqsConsumerConfig config, IdempotentConsumer<?> pipeline) {
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline);
    consumers.add(consumer);
    consumer.start();
    return consumer;
  }

  /**
   * Creates and starts a consumer on the application's own {@code sqs} client, here one of
   * {@link #interceptedClient}; the consumer does not close it, the test base does.
   */
  protected SqsIdempotentConsumer start(SqsConsumerConfig config, IdempotentConsumer<?> pipeline, SqsClient sqs) {
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline, sqs);
    consumers.add(consumer);
    consumer.start();
    return consumer;
  }

  /** A new client on the fixture whose calls go through {@code interceptor}; closed after the test. */
  protected SqsClient interceptedClient(InterceptedSqsClient.Interceptor interceptor) {
    SqsClient real = fixture.newClient();
    clients.add(real);
    return InterceptedSqsClient.of(real, interceptor);
  }

  /**
   * As {@link #interceptedClient(InterceptedSqsClient.Interceptor)}, and every call the client
   * makes is recorded in {@code log}.
   */
  protected SqsClient interceptedClient(SqsCallLog log, InterceptedSqsClient.Interceptor interceptor) {
    SqsClient real = fixture.configure(SqsClient.builder())
        .overrideConfiguration(o -> o.addExecutionInterceptor(log)).build();
    clients.add(real);
    return InterceptedSqsClient.of(real, interceptor);
  }

  /** max attempts, 100 ms fixed backoff (SQS rounds it up to 1 s of visibility), no jitter. */
  protected static RetryPolicy retries(int maxAttempts) {
    return RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build();
  }

  protected static void publish(SqsHarness queue, String key, String payload) {
    queue.publish(Map.of("idempotency-key", key), payload.getBytes(StandardCharsets.UTF_8));
  }

  /** Simulated slow work inside a handler (not an assertion). */
  protected static void work(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
