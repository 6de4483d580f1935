package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ConsumerHealth;
import io.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.sqs.SqsClient;

/** {@link SqsIdempotentConsumer#health()}: what a readiness probe sees. */
class SqsHealthIT extends SqsTestBase {
  private static final Duration BACKOFF = Duration.ofSeconds(3);

  @Test
  void healthShowsTheQueueTheLastReceiveAndAMessageHeldForItsRetry() {
    SqsHarness queue = queue(true);
    queue.publish(Map.of("idempotency-key", "h1"), "{}".getBytes(StandardCharsets.UTF_8), "g");
    queue.publish(Map.of("idempotency-key", "h2"), "{}".getBytes(StandardCharsets.UTF_8), "g");
    AtomicInteger h1Calls = new AtomicInteger();
    RetryPolicy slowRetry = RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
    Instant before = Instant.now();
    // per-message mode: in batch mode h1's one failure is its run in the rolled-back batch of h1 and
    // h2, and the redo one by one applies both without a retry held in process
    SqsIdempotentConsumer consumer = start(queue.config().maxBatchSize(1).build(), pipeline((message, session) -> {
      if (key(message).equals("h1") && h1Calls.incrementAndGet() == 1) {
        throw new IllegalStateException("h1 fails once");
      }
      TestDatabase.record(session, key(message), message.payload());
    }, slowRetry));

    // h1 waits its backoff in process, h2 hidden behind it
    await().atMost(TIMEOUT).until(() -> consumer.health().heldForRetry() == 1);
    ConsumerHealth holding = consumer.health();
    assertThat(holding.running()).isTrue();
    assertThat(holding.connected()).isTrue();
    assertThat(holding.consuming()).containsExactly(queue.destination());
    assertThat(holding.lastReceive()).isAfterOrEqualTo(before);
    assertThat(holding.store().isAvailable()).isTrue();
    assertThat(holding.isReady()).isTrue();

    await().atMost(TIMEOUT).until(() -> db.total() == 2);
    await().atMost(TIMEOUT).until(() -> consumer.health().heldForRetry() == 0);
    assertThat(db.order()).containsExactly("h1", "h2");

    consumer.close();
    ConsumerHealth closed = consumer.health();
    assertThat(closed.running()).isFalse();
    assertThat(closed.isReady()).isFalse();
    assertThat(closed.consuming()).isEmpty();
  }

  @Test
  void aFailingReceiveIsNotConnectedUntilAReceiveSucceedsAgain() {
    SqsHarness queue = queue(false);
    AtomicBoolean failing = new AtomicBoolean();
    SqsClient sqs = interceptedClient((method, args, real) -> {
      if (method.equals("receiveMessage") && failing.get()) {
        throw SdkClientException.create("SQS unreachable (test)");
      }
      return real.call();
    });
    SqsIdempotentConsumer consumer = start(queue.config().pollErrorBackoff(Duration.ofMillis(200)).build(),
        pipeline(recording(), retries(3)), sqs);
    assertThat(consumer.health().connected()).as("start() read the queue").isTrue();
    await().atMost(TIMEOUT).until(() -> consumer.health().lastReceive() != null);

    failing.set(true);
    await().atMost(TIMEOUT).until(() -> !consumer.health().connected());
    assertThat(consumer.health().isReady()).isFalse();
    assertThat(consumer.health().running()).isTrue();

    failing.set(false);
    await().atMost(TIMEOUT).until(() -> consumer.health().isReady());
  }
}
