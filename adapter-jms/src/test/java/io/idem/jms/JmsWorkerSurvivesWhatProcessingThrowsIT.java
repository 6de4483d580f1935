package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyListener;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.ErrorInjector;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The pipeline turns an {@link Error} from the handler into a handler failure, but not one from an
 * {@link IdempotencyListener}: that escapes {@code IdempotentConsumer.process}. Such an error used
 * to end the worker thread (its connection closed, so the message went back, but nobody consumed
 * it any more) while {@code isRunning()} stayed true. Now the session is rolled back or recovered,
 * the message is redelivered and the worker carries on; a fatal {@link VirtualMachineError} still
 * ends the worker, visibly.
 */
class JmsWorkerSurvivesWhatProcessingThrowsIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  private static MessageHandler<SqlSession> recordingInto(Effects effects) {
    return (message, session) -> effects.record(session, message.header("idempotency-key"));
  }

  private static void publish(JmsHarness harness, String key) {
    harness.publish(Map.of("idempotency-key", key), "{}".getBytes(StandardCharsets.UTF_8));
  }

  @ParameterizedTest
  @EnumSource(JmsSessionMode.class)
  void anErrorBeforeTheSettlementReturnsTheMessageAndTheWorkerGoesOn(JmsSessionMode mode) {
    try (JmsHarness harness = new JmsHarness(unique("survive-error"), b -> b.concurrency(1).sessionMode(mode))) {
      Effects effects = Effects.newRun();
      OutcomeRecorder outcomes = new OutcomeRecorder();
      BrokerConsumer consumer = harness.newConsumer(pipeline(unique("g"), recordingInto(effects), attempts(3),
          ErrorInjector.afterCommit("boom-1", 1, new AssertionError("boom")), outcomes));
      try {
        consumer.start();
        publish(harness, "boom-1");
        // committed, then the error: the redelivery is found to be a duplicate and settled
        await("redelivered and settled").atMost(TIMEOUT)
            .until(() -> outcomes.count("boom-1", ProcessingOutcome.DUPLICATE) == 1);
        assertThat(effects.count("boom-1")).isEqualTo(1);
        assertThat(consumer.isRunning()).isTrue();

        publish(harness, "after-1");
        await("the worker takes the next message").atMost(TIMEOUT).until(() -> effects.count("after-1") == 1);
        await().atMost(TIMEOUT).until(() -> harness.pendingCount() == 0);
        assertThat(consumer.isRunning()).isTrue();
      } finally {
        consumer.close();
      }
      assertThat(effects.count("boom-1")).isEqualTo(1);
      assertThat(harness.deadLetters()).isEmpty();
    }
  }

  @Test
  void aFatalErrorEndsTheWorkerVisiblyAndReturnsTheMessage() {
    try (JmsHarness harness = new JmsHarness(unique("survive-fatal"), b -> b.concurrency(1))) {
      Effects effects = Effects.newRun();
      String group = unique("g");
      OutOfMemoryError fatal = new OutOfMemoryError("simulated");
      BrokerConsumer consumer = harness.newConsumer(
          pipeline(group, recordingInto(effects), attempts(3), ErrorInjector.afterCommit("fatal-1", 1, fatal)));
      List<Throwable> uncaught = new CopyOnWriteArrayList<>();
      Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
      // recorded here, not rethrown by Awaitility: the test runner takes an OutOfMemoryError for its own
      Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
      try {
        consumer.start();
        publish(harness, "fatal-1");
        await("the consumer reports the dead worker").dontCatchUncaughtExceptions().atMost(TIMEOUT)
            .until(() -> !consumer.isRunning());
        await("the worker ended with the error").dontCatchUncaughtExceptions().atMost(TIMEOUT)
            .until(() -> uncaught.contains(fatal));
      } finally {
        consumer.close();
        Thread.setDefaultUncaughtExceptionHandler(previous);
      }
      // rolled back, never acknowledged: the next consumer finds the committed effect a duplicate
      await("returned to the queue").atMost(TIMEOUT).until(() -> harness.pendingCount() == 1);
      OutcomeRecorder outcomes = new OutcomeRecorder();
      BrokerConsumer next = harness.newConsumer(pipeline(group, recordingInto(effects), attempts(3), outcomes));
      try {
        next.start();
        await().atMost(TIMEOUT).until(() -> outcomes.count("fatal-1", ProcessingOutcome.DUPLICATE) == 1);
      } finally {
        next.close();
      }
      assertThat(effects.count("fatal-1")).isEqualTo(1);
      assertThat(harness.pendingCount()).isZero();
    }
  }
}
