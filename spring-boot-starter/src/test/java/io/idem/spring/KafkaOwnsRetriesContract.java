package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Issue 24, case 1: no container setting makes Idem lose a Kafka message. On Spring Boot's
 * default error handler ({@code DefaultErrorHandler}: 10 deliveries, then "Backoff … exhausted"
 * and the offset committed) with {@code idem.retry.max-attempts} = {@value
 * KafkaDropInApp#MAX_ATTEMPTS}, a record that always fails is run {@value
 * KafkaDropInApp#MAX_ATTEMPTS} times and dead-lettered with that attempt (without Idem owning the
 * retries: 10 runs, then skipped — no effect, no dead letter), and one that fails 11 times is
 * applied on its 12th run.
 */
abstract class KafkaOwnsRetriesContract extends KafkaDropInApp implements DropInListenerContract {

  /** The topic of the listener under test. */
  abstract String topic();

  @Override
  public void send(String key, String body) {
    send(topic(), key, body, true);
  }

  @Test
  void aRecordThatAlwaysFailsRunsEveryAttemptAndIsDeadLetteredPastSpringsTenDeliveries() {
    String key = "k-" + UUID.randomUUID();
    send(key, "poison 50");

    await().atMost(WAIT).until(() -> deadLetters.of(key) != null);
    Map<String, String> headers = deadLetters.of(key);
    assertThat(headers).containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(MAX_ATTEMPTS))
        .containsEntry(DeadLetterReason.HEADER_CAUSE, "MAX_ATTEMPTS_EXCEEDED");
    assertThat(payments.runs(key)).as("handler runs: every attempt, past Spring's 10").isEqualTo(MAX_ATTEMPTS);
    assertThat(payments.rows(key)).isZero();
    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DEAD_LETTERED));
  }

  @Test
  void aRecordThatFailsElevenTimesIsAppliedOnItsTwelfthRun() {
    String key = "k-" + UUID.randomUUID();
    send(key, "flaky11 60");

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(payments.runs(key)).isEqualTo(12);
    assertThat(payments.rows(key)).isEqualTo(1);
    assertThat(outcomes.of(key)).endsWith(ProcessingOutcome.PROCESSED)
        .filteredOn(o -> o == ProcessingOutcome.RETRY).hasSize(11);
    assertThat(deadLetters.of(key)).isNull();
  }
}
