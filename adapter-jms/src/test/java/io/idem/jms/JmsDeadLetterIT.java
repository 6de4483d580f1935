package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Rollback → JMSXDeliveryCount rises → dead-letter queue with the reason, and the broker backstop. */
class JmsDeadLetterIT {
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

  @Test
  void rollbackRaisesDeliveryCountThenDeadLettersWithReasonAfterBrokerRedeliveryDelay() throws Exception {
    Duration brokerDelay = Duration.ofMillis(400);
    String name = unique("dlq-count");
    harness = new JmsHarness(name,
        AddressPolicy.deadLetterTo(name + ".dlq").withRedeliveryDelay(brokerDelay), b -> b.concurrency(1));
    harness.publish(Map.of("idempotency-key", "poison", "x-trace", "t-1"),
        "{\"poison\":true}".getBytes(StandardCharsets.UTF_8));
    Effects effects = Effects.newRun();
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    List<Instant> seenAt = new CopyOnWriteArrayList<>();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      attempts.add(message.deliveryAttempt());
      seenAt.add(message.receivedAt());
      effects.record(session, "poison");
      throw new IllegalStateException("always fails");
    }, attempts(3), outcomes));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> harness.deadLetters().size() == 1);
    assertThat(attempts).containsExactly(1, 2, 3);
    // the spacing is the broker's redelivery-delay, not the pipeline's 50 ms backoff
    assertThat(Duration.between(seenAt.get(0), seenAt.get(1))).isGreaterThanOrEqualTo(brokerDelay.minusMillis(50));
    DeadLetteredMessage letter = harness.deadLetters().get(0);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(letter.headers())
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3")
        .containsEntry("idempotency-key", "poison")
        .containsEntry("x-trace", "t-1")
        .containsEntry(JmsAcknowledgement.HEADER_ORIGINAL_QUEUE, name)
        .containsKey(JmsAcknowledgement.HEADER_ORIGINAL_MESSAGE_ID);
    assertThat(new String(letter.payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
    // on the wire the reason uses JMS property names
    Message raw = harness.rawDeadLetters().get(0);
    assertThat(raw.getStringProperty("idem_dead_letter_cause")).isEqualTo("MAX_ATTEMPTS_EXCEEDED");
    assertThat(raw.getStringProperty("idempotency_key")).isEqualTo("poison");
    assertThat(outcomes.count("poison", ProcessingOutcome.DEAD_LETTERED)).isEqualTo(1);
    consumer.close();
    assertThat(harness.pendingCount()).isZero();
    assertThat(effects.count("poison")).isZero();
  }

  @Test
  void idemDeadLettersWithItsReasonWhenTheBrokersLimitIsBelowThePipelines() {
    // before issue 11 the broker moved the message at its limit, without a reason
    String name = unique("dlq-backstop");
    harness = new JmsHarness(name,
        AddressPolicy.deadLetterTo(name + ".dlq").withMaxDeliveryAttempts(2), b -> b.concurrency(1));
    harness.publish(Map.of("idempotency-key", "k"), "{}".getBytes(StandardCharsets.UTF_8));
    List<Integer> attempts = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      attempts.add(message.deliveryAttempt());
      throw new IllegalStateException("fails");
    }, attempts(10)));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> harness.deadLetters().size() == 1);
    assertThat(attempts).containsExactly(1, 2);
    assertThat(harness.deadLetters().get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(harness.deadLetters().get(0).headers())
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "2")
        .containsEntry("idempotency-key", "k");
  }

  @Test
  void mapMessageWithoutKeyIsDeadLetteredWithItsBody() throws Exception {
    String name = unique("dlq-map");
    harness = new JmsHarness(name, AddressPolicy.deadLetterTo(name + ".dlq"), b -> b.concurrency(1));
    harness.publish(session -> {
      MapMessage m = session.createMapMessage();
      m.setString("order", "42");
      m.setInt("amount", 7);
      m.setStringProperty("x_origin", "legacy");
      m.setJMSCorrelationID("corr-1");
      return m;
    });
    List<InboundMessage> seen = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> seen.add(message), attempts(3)));
    consumer.start();

    await().atMost(TIMEOUT).until(() -> harness.deadLetters().size() == 1);
    assertThat(seen).isEmpty();
    assertThat(harness.deadLetters().get(0).cause()).isEqualTo(DeadLetterCause.NO_KEY.name());
    // the reason names the key where a JMS producer sets it: the property, spelled with '_'
    assertThat(harness.deadLetters().get(0).detail()).contains("no property 'idempotency_key'")
        .doesNotContain("header 'idempotency-key'");
    Message raw = harness.rawDeadLetters().get(0);
    assertThat(raw).isInstanceOf(MapMessage.class);
    assertThat(((MapMessage) raw).getString("order")).isEqualTo("42");
    assertThat(((MapMessage) raw).getInt("amount")).isEqualTo(7);
    assertThat(raw.getStringProperty("x_origin")).isEqualTo("legacy");
    assertThat(raw.getJMSCorrelationID()).isEqualTo("corr-1");
    consumer.close();
    assertThat(harness.pendingCount()).isZero();
  }
}
