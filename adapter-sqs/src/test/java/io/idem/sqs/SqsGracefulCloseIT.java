package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.testkit.OutcomeRecorder.Settled;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * close() in the middle of a batch whose processed messages still wait for their (batched)
 * deletes: the in-flight message finishes, the deletes are flushed, the unstarted rest is handed
 * back, and a restarted consumer reprocesses nothing.
 */
class SqsGracefulCloseIT extends SqsTestBase {

  @Test
  void closeFlushesPendingDeletesAndHandsBackTheRest() throws Exception {
    SqsHarness queue = queue(false);
    for (int i = 1; i <= 6; i++) {
      publish(queue, "close-" + i, "{\"n\":" + i + "}");
    }
    CountDownLatch inThird = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    var pipeline = pipeline((message, session) -> {
      TestDatabase.record(session, key(message), message.payload());
      if (key(message).equals("close-3")) {
        inThird.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("test never released the handler");
        }
      }
    }, retries(3));
    // deletes wait up to 50 s for a batch: at close() the processed messages are still undeleted;
    // the 60 s visibility keeps anything not deleted or handed back out of sight for the test
    SqsConsumerConfig config = queue.config()
        .visibilityTimeout(Duration.ofSeconds(60))
        .deleteBatchWindow(Duration.ofSeconds(50))
        .concurrency(1)
        .maxBatchSize(1) // per-message mode: in batch mode close() lets the started batch of six finish
        .build();
    // Emulator corner: ElasticMQ returns all six in one receive; AWS may return fewer per receive,
    // which the assertions below tolerate only as far as "processed ⇒ deleted, rest ⇒ visible".
    SqsIdempotentConsumer first = start(config, pipeline);
    assertThat(inThird.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(first.deletedCount()).isZero(); // close-1 and close-2 are processed, not deleted yet

    CompletableFuture<Void> closing = CompletableFuture.runAsync(first::close);
    await().atMost(TIMEOUT).until(() -> !first.isRunning());
    release.countDown();
    closing.get(30, TimeUnit.SECONDS);

    assertThat(db.order()).containsExactly("close-1", "close-2", "close-3");
    assertThat(first.deletedCount()).isEqualTo(3);
    assertThat(queue.inFlightCount()).isZero(); // nothing left hidden: deleted or handed back
    assertThat(queue.visibleCount()).isEqualTo(3);

    SqsIdempotentConsumer second = start(queue.config().build(), pipeline);
    await().atMost(TIMEOUT).until(() -> db.total() == 6);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    second.close();

    assertThat(db.doubled()).isZero();
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
    assertThat(outcomes.settled()).extracting(Settled::key)
        .containsExactlyInAnyOrder("close-1", "close-2", "close-3", "close-4", "close-5", "close-6");
  }
}
