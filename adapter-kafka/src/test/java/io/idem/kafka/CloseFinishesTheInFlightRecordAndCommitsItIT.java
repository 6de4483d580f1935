package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code close()} waits for the record being handled, commits it, and leaves the records fetched
 * after it uncommitted for the next consumer, which then processes them without a duplicate. The
 * first consumer is in per-message mode ({@code maxBatchSize(1)}): in batch mode the unit in hand
 * is a batch, and close() finishes the whole batch.
 */
class CloseFinishesTheInFlightRecordAndCommitsItIT extends KafkaITSupport {

  /** {@code concurrency} 2: the record is in flight on a worker, not on the consumer's thread. */
  @ParameterizedTest(name = "concurrency {0}")
  @ValueSource(ints = {1, 2})
  void closeWaitsForTheInFlightRecordAndCommitsIt(int concurrency) throws Exception {
    publish(0, "in-flight", "{}");
    for (int i = 0; i < 5; i++) {
      publish(0, "after-" + i, "{}");
    }
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    KafkaIdempotentConsumer consumer = start((message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      if (keyOf(message).equals("in-flight")) {
        entered.countDown();
        release.await(60, TimeUnit.SECONDS);
      }
    }, b -> b.maxBatchSize(1).shutdownTimeout(Duration.ofSeconds(30)).concurrency(concurrency));
    assertThat(entered.await(60, TimeUnit.SECONDS)).isTrue();

    CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
    await("close waits for the in-flight record").during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(3))
        .until(() -> !closing.isDone());
    release.countDown();
    closing.get(30, TimeUnit.SECONDS);

    assertThat(consumer.isRunning()).isFalse();
    assertThat(effects.count("in-flight")).isEqualTo(1);
    assertThat(committed(0)).isEqualTo(1);
    assertThat(effects.total()).isEqualTo(1);

    start(recording(), b -> b);
    await("the rest processed by the next consumer").atMost(TIMEOUT).until(() -> effects.total() == 6);
    awaitSettled();
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
    assertThat(effects.doubled()).isZero();
  }
}
