package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * FIFO queues: a failing message holds back the rest of its message group, not other groups; the
 * key comes from the message attribute, not from the deduplication id.
 */
class SqsFifoOrderingIT extends SqsTestBase {
  /**
   * a1 is retried in process (a2 and a3 wait behind it in the batch): a backoff long enough for
   * group B's two messages to be applied meanwhile, as they are while a1 waits.
   */
  private static final Duration A1_BACKOFF = Duration.ofSeconds(1);

  @Test
  void aFailedMessageBlocksItsGroupButNotOthers() {
    SqsHarness queue = queue(true);
    for (String key : List.of("a1", "a2", "a3")) {
      queue.publish(Map.of("idempotency-key", key), bytes(key), "A");
    }
    for (String key : List.of("b1", "b2")) {
      queue.publish(Map.of("idempotency-key", key), bytes(key), "B");
    }
    List<String> handled = new CopyOnWriteArrayList<>();
    AtomicInteger a1Failures = new AtomicInteger();
    var pipeline = pipeline((message, session) -> {
      String key = key(message);
      handled.add(key);
      if (key.equals("a1") && a1Failures.incrementAndGet() <= 2) {
        throw new IllegalStateException("a1 fails twice");
      }
      TestDatabase.record(session, key, message.payload());
    }, RetryPolicy.builder().maxAttempts(5).initialBackoff(A1_BACKOFF).maxBackoff(A1_BACKOFF).multiplier(1.0)
        .jitter(0).build());
    start(queue.config().concurrency(2).build(), pipeline);

    await().atMost(TIMEOUT).until(() -> db.total() == 5);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    List<String> order = db.order();
    assertThat(order).filteredOn(k -> k.startsWith("a")).containsExactly("a1", "a2", "a3");
    assertThat(order).filteredOn(k -> k.startsWith("b")).containsExactly("b1", "b2");
    // group B did not wait for a1's retries
    assertThat(order.indexOf("b2")).isLessThan(order.indexOf("a1"));
    // nothing of group A ran before a1 finally succeeded (its third call)
    assertThat(handled.indexOf("a2")).isGreaterThan(nthIndex(handled, "a1", 3));
    assertThat(outcomes.count("a1", ProcessingOutcome.RETRY)).isEqualTo(2);
    assertThat(db.doubled()).isZero();
  }

  @Test
  void theKeyComesFromTheAttributeNotTheDeduplicationId() {
    SqsHarness queue = queue(true);
    // a legitimate re-publish (new deduplication id, same business key) reaches the consumer and
    // is skipped by the store; two events sharing a deduplication id would be the broker's call
    queue.publish(Map.of("idempotency-key", "order-7"), bytes("{\"order\":7}"), "orders");
    queue.publish(Map.of("idempotency-key", "order-7"), bytes("{\"order\":7}"), "orders");
    queue.publish(Map.of("idempotency-key", "order-8"), bytes("{\"order\":8}"), "orders");
    start(queue.config().build(), pipeline(recording(), retries(3)));

    await().atMost(TIMEOUT).until(() -> outcomes.count(ProcessingOutcome.DUPLICATE) == 1);
    await().atMost(TIMEOUT).until(() -> db.total() == 2);
    assertThat(db.order()).containsExactly("order-7", "order-8");
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static int nthIndex(List<String> list, String value, int n) {
    int seen = 0;
    for (int i = 0; i < list.size(); i++) {
      if (list.get(i).equals(value) && ++seen == n) {
        return i;
      }
    }
    return -1;
  }
}
