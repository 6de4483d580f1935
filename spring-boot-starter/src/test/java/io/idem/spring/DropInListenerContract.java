package io.idem.spring;

import static io.idem.spring.DropInTestSupport.MAX_ATTEMPTS;
import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * The behaviour every {@code @Idempotent} listener kind must show, against the real broker and
 * PostgreSQL: a duplicate is skipped, a write followed by a failure leaves neither the write nor
 * the marker, a failing message is retried by Idem's policy and then dead-lettered with the
 * reason, and a message that fails once is applied once.
 */
abstract class DropInListenerContract {
  static final String GROUP = "billing";

  @Autowired DropInTestSupport.Payments payments;
  @Autowired DropInTestSupport.Outcomes outcomes;
  @Autowired SpringTransactionStore store;
  @Autowired DropInTestSupport.DeadLetterInbox deadLetters;

  /** Sends {@code body} with the idempotency key {@code key} to the listener's source. */
  abstract void send(String key, String body);

  /** {@code idem.retry.max-attempts} of the application under test. */
  int maxAttempts() {
    return MAX_ATTEMPTS;
  }

  /** The headers of the dead letter of {@code key}, or {@code null} while there is none. */
  private @Nullable Map<String, String> deadLetter(String key) {
    return deadLetters.of(key);
  }

  private static String newKey() {
    return "k-" + UUID.randomUUID();
  }

  private boolean processed(String key) {
    return store.isProcessed(new IdempotencyKey(GROUP, key, KeySource.HEADER));
  }

  @Test
  void aDuplicateIsSkippedAndTheEffectAppliedOnce() {
    String key = newKey();
    send(key, "pay 10");
    send(key, "pay 10");

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DUPLICATE));
    assertThat(outcomes.of(key)).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(payments.runs(key)).isEqualTo(1);
    assertThat(payments.rows(key)).isEqualTo(1);
    assertThat(processed(key)).isTrue();
  }

  @Test
  void aFailureRollsBackTheWriteWithTheMarkerIsRetriedThenDeadLetteredWithTheReason() {
    String key = newKey();
    send(key, "poison 20");

    await().atMost(WAIT).until(() -> deadLetter(key) != null);
    Map<String, String> headers = deadLetter(key);
    assertThat(headers).containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, GROUP)
        .containsEntry(DeadLetterReason.HEADER_KEY, key)
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(maxAttempts()));
    assertThat(headers.get(DeadLetterReason.HEADER_DETAIL)).contains("attempt " + maxAttempts() + " of " + maxAttempts());
    assertThat(headers.get(DeadLetterReason.HEADER_DETAIL)).contains("injected failure");
    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DEAD_LETTERED));
    assertThat(payments.runs(key)).isEqualTo(maxAttempts());
    assertThat(payments.rows(key)).as("the handler's writes, rolled back with the marker").isZero();
    assertThat(processed(key)).isFalse();
  }

  @Test
  void aMessageThatFailsOnceIsAppliedOnce() {
    String key = newKey();
    send(key, "flaky 30");

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(outcomes.of(key)).containsExactly(ProcessingOutcome.RETRY, ProcessingOutcome.PROCESSED);
    assertThat(payments.runs(key)).isEqualTo(2);
    assertThat(payments.rows(key)).isEqualTo(1);
    assertThat(processed(key)).isTrue();
  }
}
