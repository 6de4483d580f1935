package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A retry backoff longer than {@code max.poll.interval.ms} does not get the consumer kicked out of
 * its group: the partition is paused and the consumer keeps polling. Evidence: the group keeps
 * the same member, the other partition keeps flowing during the backoff, and the retried record
 * comes back as attempt 2 (a rebalance would have reset the adapter's attempt count to 1).
 */
class LongRetryBackoffKeepsTheConsumerInItsGroupIT extends KafkaITSupport {
  private static final Duration BACKOFF = Duration.ofSeconds(4);
  private static final int MAX_POLL_INTERVAL_MS = 1000;

  @Override
  protected int partitions() {
    return 2;
  }

  @Override
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  record Delivery(String key, int attempt, long atNanos) {}

  @Test
  void backoffLongerThanMaxPollIntervalKeepsTheMember() throws Exception {
    List<Delivery> deliveries = new CopyOnWriteArrayList<>();
    start((message, session) -> {
      deliveries.add(new Delivery(keyOf(message), message.deliveryAttempt(), System.nanoTime()));
      TestEffects.record(session, keyOf(message), message.payload());
      if (keyOf(message).equals("slow-1") && message.deliveryAttempt() == 1) {
        throw new IllegalStateException("fails once");
      }
    }, b -> b.consumerProperty("max.poll.interval.ms", MAX_POLL_INTERVAL_MS));

    publish(0, "slow-1", "{}");
    await().atMost(TIMEOUT).until(() -> outcomes.count("slow-1", ProcessingOutcome.RETRY) == 1);
    Set<String> membersDuringBackoff = members();
    assertThat(membersDuringBackoff).hasSize(1);

    publish(1, "other-1", "{}"); // the other partition is not held up by the paused one
    await().atMost(Duration.ofSeconds(3)).until(() -> effects.count("other-1") == 1);
    assertThat(effects.count("slow-1")).isZero();

    await().atMost(TIMEOUT).until(() -> effects.count("slow-1") == 1);
    List<Delivery> slow = deliveries.stream().filter(d -> d.key().equals("slow-1")).toList();
    assertThat(slow).extracting(Delivery::attempt).containsExactly(1, 2);
    long gapMs = TimeUnit.NANOSECONDS.toMillis(slow.get(1).atNanos() - slow.get(0).atNanos());
    assertThat(gapMs).isGreaterThanOrEqualTo(BACKOFF.toMillis()).isGreaterThan(3L * MAX_POLL_INTERVAL_MS);
    assertThat(members()).isEqualTo(membersDuringBackoff);
  }

  private Set<String> members() throws Exception {
    return KafkaTestClients.members(group);
  }
}
