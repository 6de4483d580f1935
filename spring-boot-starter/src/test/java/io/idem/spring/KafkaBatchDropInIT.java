package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * {@code @Idempotent} on a Kafka batch listener ({@code batch = "true"}, taking {@code
 * List<ConsumerRecord>}), mapped onto Idem's batch mode: one transaction per partition of the
 * poll, the method called with the new records only (a duplicate in the batch or from before left
 * out), a failing batch redone record by record, what fails retried by Idem's policy and then
 * dead-lettered, the records behind it (same partition) applied after it, the ones before it
 * never again.
 */
class KafkaBatchDropInIT extends KafkaDropInApp {
  @Autowired Listeners listeners;

  @Override
  public void send(String key, String body) {
    send(BATCHES, key, body, true);
  }

  /**
   * The drop-in contract's failure tests, in batch mode: a failing batch is redone record by record (Idem's batch
   * rules), so a record that always fails runs once or twice per attempt, and one that fails on
   * its first run only is applied by the redo of the same delivery, without an attempt counted.
   */
  @Test
  void aFailureRollsBackTheWriteWithTheMarkerIsRetriedThenDeadLetteredWithTheReason() {
    String key = "k-" + UUID.randomUUID();
    send(key, "poison 20");

    await().atMost(WAIT).until(() -> deadLetters.of(key) != null);
    assertThat(deadLetters.of(key)).containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(MAX_ATTEMPTS))
        .containsEntry(DeadLetterReason.HEADER_KEY, key);
    assertThat(deadLetters.of(key).get(DeadLetterReason.HEADER_DETAIL))
        .contains("attempt " + MAX_ATTEMPTS + " of " + MAX_ATTEMPTS).contains("injected failure");
    assertThat(payments.runs(key)).isBetween(MAX_ATTEMPTS, 2 * MAX_ATTEMPTS);
    assertThat(payments.rows(key)).isZero();
  }

  @Test
  void aMessageThatFailsOnceIsAppliedOnce() {
    String key = "k-" + UUID.randomUUID();
    send(key, "flaky 30");

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(outcomes.of(key)).endsWith(ProcessingOutcome.PROCESSED).doesNotContain(ProcessingOutcome.DEAD_LETTERED);
    assertThat(payments.runs(key)).isEqualTo(2);
    assertThat(payments.rows(key)).isEqualTo(1);
  }

  /** The drop-in contract's duplicate test, in batch mode: the second copy never reaches the method. */
  @Test
  void aDuplicateIsNeverInTheListTheMethodGets() {
    String key = "k-" + UUID.randomUUID();
    String other = "k-" + UUID.randomUUID();
    send(key, "pay 10");
    send(key, "pay 10");
    send(other, "pay 11");

    await().atMost(WAIT).until(() -> outcomes.of(other).contains(ProcessingOutcome.PROCESSED)
        && outcomes.of(key).contains(ProcessingOutcome.DUPLICATE));
    assertThat(outcomes.of(key)).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(payments.rows(key)).isEqualTo(1);
    assertThat(payments.rows(other)).isEqualTo(1);
    assertThat(listeners.batchCalls()).allSatisfy(call -> assertThat(call).doesNotHaveDuplicates());
    assertThat(listeners.batchCalls().stream().flatMap(List::stream).filter(key::equals)).hasSize(1);
  }

  @Test
  void aPoisonRecordIsDeadLetteredAndTheRecordsAroundItAreAppliedOnce() {
    String before = "k-" + UUID.randomUUID();
    String poison = "k-" + UUID.randomUUID();
    String after = "k-" + UUID.randomUUID();
    send(before, "pay 20");
    send(poison, "poison 21");
    send(after, "pay 22");

    await().atMost(WAIT).until(() -> outcomes.of(after).contains(ProcessingOutcome.PROCESSED)
        && deadLetters.of(poison) != null);
    assertThat(deadLetters.of(poison)).containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(MAX_ATTEMPTS))
        .containsEntry(DeadLetterReason.HEADER_CAUSE, "MAX_ATTEMPTS_EXCEEDED");
    assertThat(payments.rows(poison)).as("rolled back every time").isZero();
    // a failing batch is redone one by one: each attempt runs the poison at most twice
    assertThat(payments.runs(poison)).isBetween(MAX_ATTEMPTS, 2 * MAX_ATTEMPTS);
    assertThat(payments.rows(before)).isEqualTo(1);
    assertThat(payments.rows(after)).isEqualTo(1);
    assertThat(outcomes.of(before)).containsExactly(ProcessingOutcome.PROCESSED);
    assertThat(outcomes.of(after)).endsWith(ProcessingOutcome.PROCESSED).doesNotContain(ProcessingOutcome.DUPLICATE);
  }

  @Test
  void aRecordThatFailsElevenTimesInABatchIsAppliedOnce() {
    String key = "k-" + UUID.randomUUID();
    send(key, "flaky11 31");

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.PROCESSED));
    assertThat(payments.rows(key)).isEqualTo(1);
    assertThat(deadLetters.of(key)).isNull();
  }

  /**
   * The batch hand-back: a poison record whose runs outlast the call's budget is handed back part
   * of the way (logged by Idem's error handler as a pause at DEBUG), and still the records before
   * it are applied once and never again, the ones behind it once, the poison dead-lettered with
   * the true attempt.
   */
  @Test
  void aBatchHandedBackCommitsWhatWasSettledAndSeeksTheRestBack() {
    ch.qos.logback.classic.Logger handler =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(IdemKafkaErrorHandler.class);
    ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> log =
        new ch.qos.logback.core.read.ListAppender<>();
    ch.qos.logback.classic.Level level = handler.getLevel();
    handler.setLevel(ch.qos.logback.classic.Level.DEBUG);
    log.start();
    handler.addAppender(log);
    try {
      String before = "k-" + UUID.randomUUID();
      String poison = "k-" + UUID.randomUUID();
      String after = "k-" + UUID.randomUUID();
      send(BATCH_HAND_BACKS, before, "pay 40", true);
      send(BATCH_HAND_BACKS, poison, "poison 41", true);
      send(BATCH_HAND_BACKS, after, "pay 42", true);

      await().atMost(WAIT).until(() -> outcomes.of(after).contains(ProcessingOutcome.PROCESSED)
          && deadLetters.of(poison) != null);
      assertThat(deadLetters.of(poison)).containsEntry(DeadLetterReason.HEADER_ATTEMPT, String.valueOf(MAX_ATTEMPTS));
      assertThat(payments.rows(poison)).isZero();
      assertThat(payments.rows(before)).isEqualTo(1);
      assertThat(payments.rows(after)).isEqualTo(1);
      assertThat(outcomes.of(before)).as("committed before the hand-back, never redelivered")
          .containsExactly(ProcessingOutcome.PROCESSED);
      assertThat(log.list).as("handed back, the partition paused")
          .anyMatch(e -> e.getFormattedMessage().startsWith("paused " + BATCH_HAND_BACKS));
    } finally {
      handler.detachAppender(log);
      handler.setLevel(level);
    }
  }
}
