package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.OutcomeRecorder;
import io.idem.testkit.OutcomeRecorder.Settled;
import jakarta.jms.Connection;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** CLIENT_ACKNOWLEDGE mode: one session per worker, so one worker's ack never covers another's message. */
class JmsClientAcknowledgeIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private JmsHarness harness;
  private BrokerConsumer consumer;

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (harness != null) {
      harness.close();
    }
  }

  private static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The broker rule the one-session-per-worker design exists for. */
  @Test
  void acknowledgeOnASharedSessionAcknowledgesEveryMessageItDelivered() throws Exception {
    harness = new JmsHarness(unique("ca-rule"));
    harness.publish(Map.of("idempotency-key", "first"), json("{}"));
    harness.publish(Map.of("idempotency-key", "second"), json("{}"));
    try (Connection c = harness.artemis.connectionFactory().createConnection()) {
      c.start();
      Session session = c.createSession(false, Session.CLIENT_ACKNOWLEDGE);
      MessageConsumer reader = session.createConsumer(session.createQueue(harness.queue));
      Message first = reader.receive(5_000);
      Message second = reader.receive(5_000);
      assertThat(first).isNotNull();
      assertThat(second).isNotNull();
      assertThat(harness.pendingCount()).as("both delivered, neither acknowledged").isEqualTo(2);
      second.acknowledge(); // only "second"... or so it reads
      // Artemis counts delivered-but-unacknowledged messages: none is left while the session is
      // still open, so "first" was acknowledged together with "second" (no waiting window)
      await().atMost(TIMEOUT).untilAsserted(() -> assertThat(harness.pendingCount()).isZero());
    }
  }

  @Test
  void slowMessageOnOneWorkerIsNotAcknowledgedByAnotherWorkersAck() {
    harness = new JmsHarness(unique("ca-workers"), b -> b.concurrency(2).sessionMode(JmsSessionMode.CLIENT_ACKNOWLEDGE));
    Effects effects = Effects.newRun();
    CountDownLatch slowStarted = new CountDownLatch(1);
    CountDownLatch fastAcked = new CountDownLatch(1);
    AtomicReference<Boolean> fastAckedWhileSlowInFlight = new AtomicReference<>();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotencyListener fastWatcher = new IdempotencyListener() {
      @Override
      public void onOutcome(InboundMessage m, @Nullable IdempotencyKey key, ProcessingOutcome o, Duration d) {
        if (key != null && key.value().equals("fast") && o == ProcessingOutcome.PROCESSED) {
          fastAcked.countDown();
        }
      }
    };
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      String key = message.header("idempotency-key");
      effects.record(session, key);
      if ("slow".equals(key) && message.deliveryAttempt() == 1) {
        slowStarted.countDown();
        // in flight while the other worker acknowledges "fast" on its own session; the test thread
        // asserts it (an assertion failing here would only become a RETRY, which is expected anyway)
        fastAckedWhileSlowInFlight.set(fastAcked.await(20, TimeUnit.SECONDS));
        throw new IllegalStateException("slow fails once, after the other worker's ack");
      }
    }, attempts(3), outcomes, fastWatcher));
    consumer.start();
    harness.publish(Map.of("idempotency-key", "slow"), json("{\"n\":1}"));
    await().atMost(TIMEOUT).until(() -> slowStarted.getCount() == 0);
    harness.publish(Map.of("idempotency-key", "fast"), json("{\"n\":2}"));

    // had "fast"'s acknowledgement covered "slow", recover() would have nothing to redeliver
    await().atMost(TIMEOUT).until(() -> effects.count("slow") == 1);
    assertThat(fastAckedWhileSlowInFlight.get()).as("'fast' was acked while 'slow' was in flight").isTrue();
    // any order: the redelivery may settle on the other worker before the retry is recorded
    await().atMost(TIMEOUT).until(() -> outcomes.settled().stream().filter(s -> "slow".equals(s.key())).count() == 2);
    assertThat(outcomes.settled()).filteredOn(s -> "slow".equals(s.key()))
        .containsExactlyInAnyOrder(new Settled("slow", ProcessingOutcome.RETRY, 1),
            new Settled("slow", ProcessingOutcome.PROCESSED, 2));
    assertThat(effects.count("fast")).isEqualTo(1);
    consumer.close();
    assertThat(harness.pendingCount()).isZero();
  }

  @Test
  void deadLetterInClientAcknowledgeModeSendsTheCopyThenAcknowledges() {
    harness = new JmsHarness(unique("ca-dlq"), b -> b.sessionMode(JmsSessionMode.CLIENT_ACKNOWLEDGE));
    harness.publish(Map.of("idempotency-key", "bad"), json("{}"));
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      throw new IllegalStateException("never works");
    }, attempts(2)));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> harness.deadLetters().size() == 1);
    assertThat(harness.deadLetters().get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    consumer.close();
    assertThat(harness.pendingCount()).isZero();
  }
}
