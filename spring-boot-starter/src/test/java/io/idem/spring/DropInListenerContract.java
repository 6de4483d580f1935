package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@code @Idempotent} listener kind and form must show, against the real
 * broker and PostgreSQL: a duplicate is skipped, a write followed by a failure leaves neither the
 * write nor the marker, a failing message is retried by Idem's policy and then dead-lettered with
 * the reason and the true attempt, and a message that fails once is applied once. Implemented by
 * the drop-in test classes (a {@link DropInTest} of one application, one listener each).
 */
interface DropInListenerContract {
  String GROUP = "billing";

  DropInTestSupport.Payments payments();

  DropInTestSupport.Outcomes outcomes();

  SpringTransactionStore store();

  DropInTestSupport.DeadLetterInbox deadLetters();

  /** Sends {@code body} with the idempotency key {@code key} to the listener's source. */
  void send(String key, String body);

  /** {@code idem.retry.max-attempts} of the application under test. */
  int maxAttempts();

  private static String newKey() {
    return "k-" + UUID.randomUUID();
  }

  private boolean processed(String key) {
    return store().isProcessed(new IdempotencyKey(GROUP, key, KeySource.HEADER));
  }

  @Test
  default void aDuplicateIsSkippedAndTheEffectAppliedOnce() {
    String key = newKey();
    send(key, "pay 10");
    send(key, "pay 10");

    await().atMost(WAIT).until(() -> outcomes().of(key).contains(ProcessingOutcome.DUPLICATE));
    // in any order: with a concurrent container (MariaDbDropInIT: 4 consumers) the copy that waited
    // on the claim's lock can report DUPLICATE before the first copy's PROCESSED is reported
    assertThat(outcomes().of(key)).containsExactlyInAnyOrder(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(payments().runs(key)).isEqualTo(1);
    assertThat(payments().rows(key)).isEqualTo(1);
    assertThat(processed(key)).isTrue();
  }

  @Test
  default void aFailureRollsBackTheWriteWithTheMarkerIsRetriedThenDeadLetteredWithTheReason() {
    String key = newKey();
    send(key, "poison 20");

    await().atMost(WAIT).until(() -> deadLetters().of(key) != null);
    Map<String, String> headers = deadLetters().of(key);
    assertThat(headers).containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, GROUP)
        .containsEntry(DeadLetterReason.HEADER_KEY, key)
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(maxAttempts()));
    assertThat(headers.get(DeadLetterReason.HEADER_DETAIL)).contains("attempt " + maxAttempts() + " of " + maxAttempts());
    assertThat(headers.get(DeadLetterReason.HEADER_DETAIL)).contains("injected failure");
    await().atMost(WAIT).until(() -> outcomes().of(key).contains(ProcessingOutcome.DEAD_LETTERED));
    assertThat(payments().runs(key)).isEqualTo(maxAttempts());
    assertThat(payments().rows(key)).as("the handler's writes, rolled back with the marker").isZero();
    assertThat(processed(key)).isFalse();
  }

  @Test
  default void aMessageThatFailsOnceIsAppliedOnce() {
    String key = newKey();
    send(key, "flaky 30");

    await().atMost(WAIT).until(() -> outcomes().of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(outcomes().of(key)).containsExactly(ProcessingOutcome.RETRY, ProcessingOutcome.PROCESSED);
    assertThat(payments().runs(key)).isEqualTo(2);
    assertThat(payments().rows(key)).isEqualTo(1);
    assertThat(processed(key)).isTrue();
  }

}
