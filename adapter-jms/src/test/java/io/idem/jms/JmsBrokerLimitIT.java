package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import io.idem.RetryPolicy;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import io.idem.testkit.DeadLetteredMessage;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSContext;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.QueueRequestor;
import jakarta.jms.QueueSession;
import jakarta.jms.Session;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.activemq.artemis.api.jms.management.JMSManagementHelper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 11, item 2: no broker limit drops or dead-letters a message behind Idem's back. The
 * consumer reads Artemis' {@code max-delivery-attempts} and dead-letter address at start, refuses
 * to start where the broker would drop a message, and dead-letters with its own reason at the
 * lower of its {@code maxAttempts} and the broker's limit.
 */
class JmsBrokerLimitIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  /** The pipeline's default 5 attempts, with a short backoff to keep the test quick. */
  private static final RetryPolicy FIVE_ATTEMPTS = RetryPolicy.builder().maxAttempts(5)
      .initialBackoff(Duration.ofMillis(50)).maxBackoff(Duration.ofMillis(50)).multiplier(1.0).jitter(0).build();

  private final ArtemisFixture artemis = ArtemisFixture.shared();
  private final List<String> matches = new ArrayList<>();
  private final List<String> queues = new ArrayList<>();
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
    queues.forEach(artemis::deleteQueue);
    matches.forEach(artemis::removeAddressSettings);
  }

  /** Address settings as raw JSON, for fields {@link AddressPolicy} leaves to the catch-all. */
  private void settings(String match, String json) throws Exception {
    matches.add(match);
    try (Connection c = artemis.connectionFactory().createConnection()) {
      c.start();
      QueueSession session = (QueueSession) c.createSession(false, Session.AUTO_ACKNOWLEDGE);
      QueueRequestor requestor = new QueueRequestor(session, session.createQueue(ArtemisFixture.MANAGEMENT_ADDRESS));
      Message m = session.createMessage();
      JMSManagementHelper.putOperationInvocation(m, "broker", "addAddressSettings", match, json);
      Message reply = requestor.request(m);
      assertThat(JMSManagementHelper.hasOperationSucceeded(reply)).as("%s", JMSManagementHelper.getResult(reply)).isTrue();
    }
  }

  private String queue(String prefix) {
    String name = unique(prefix);
    artemis.createQueue(name);
    artemis.createQueue(name + ".dlq");
    queues.add(name);
    queues.add(name + ".dlq");
    return name;
  }

  private JmsIdempotentConsumer consumer(ConnectionFactory factory, String queue,
      java.util.function.UnaryOperator<JmsConsumerConfig.Builder> customizer) {
    return JmsIdempotentConsumer.create(
        customizer.apply(JmsConsumerConfig.builder(factory, queue, queue + ".dlq")
            .receiveTimeout(Duration.ofMillis(200))).build(),
        pipeline(unique("g"), (message, session) -> { }, FIVE_ATTEMPTS));
  }

  @Test
  void refusesToStartWhenTheBrokerHasALimitAndNoDeadLetterAddress() throws Exception {
    String queue = queue("limit-no-dla");
    settings(queue, "{\"maxDeliveryAttempts\":3,\"deadLetterAddress\":\"\"}");

    JmsIdempotentConsumer refused = consumer(artemis.connectionFactory(), queue, b -> b);
    assertThatThrownBy(refused::start)
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("max-delivery-attempts is 3")
        .hasMessageContaining("no dead-letter-address")
        .hasMessageContaining("DROPS")
        .hasMessageContaining("Set dead-letter-address for '" + queue + "' to '" + queue + ".dlq'");
    assertThat(refused.isRunning()).isFalse();

    // the fix the message names: a dead-letter address with a queue
    settings(queue, "{\"maxDeliveryAttempts\":3,\"deadLetterAddress\":\"" + queue + ".dlq\"}");
    JmsIdempotentConsumer started = consumer(artemis.connectionFactory(), queue, b -> b);
    consumer = started;
    started.start();
    assertThat(started.isRunning()).isTrue();
    assertThat(started.maxAttempts()).isEqualTo(3);
  }

  @Test
  void refusesToStartWhenTheDeadLetterAddressHasNoQueue() throws Exception {
    String queue = queue("limit-dla-no-queue");
    String nowhere = unique("nowhere");
    settings(queue, "{\"maxDeliveryAttempts\":3,\"deadLetterAddress\":\"" + nowhere + "\","
        + "\"autoCreateDeadLetterResources\":false}");

    JmsIdempotentConsumer refused = consumer(artemis.connectionFactory(), queue, b -> b);
    assertThatThrownBy(refused::start)
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("max-delivery-attempts is 3")
        .hasMessageContaining("dead-letter-address '" + nowhere + "' has no queue")
        .hasMessageContaining("auto-create-dead-letter-resources");
    assertThat(artemis.queueExists(nowhere)).isFalse();

    // with auto-create-dead-letter-resources the broker keeps the message: allowed
    settings(queue, "{\"maxDeliveryAttempts\":3,\"deadLetterAddress\":\"" + nowhere + "\","
        + "\"autoCreateDeadLetterResources\":true}");
    consumer = consumer(artemis.connectionFactory(), queue, b -> b);
    consumer.start();
    assertThat(consumer.isRunning()).isTrue();
  }

  /**
   * Starts a consumer on a fresh queue whose broker limit is {@code brokerLimit}, with a handler
   * that always fails, and waits for the one dead letter; returns the attempts the handler saw.
   */
  private List<Integer> alwaysFailing(String prefix, int brokerLimit, RetryPolicy policy, int expectedLimit) {
    String name = unique(prefix);
    harness = new JmsHarness(name, AddressPolicy.deadLetterTo(name + ".dlq").withMaxDeliveryAttempts(brokerLimit),
        b -> b.concurrency(1));
    harness.publish(Map.of("idempotency-key", "always-fails"), "{}".getBytes(StandardCharsets.UTF_8));
    List<Integer> runs = new CopyOnWriteArrayList<>();
    consumer = harness.newConsumer(pipeline(unique("g"), (message, session) -> {
      runs.add(message.deliveryAttempt());
      throw new IllegalStateException("always fails");
    }, policy));
    consumer.start();
    assertThat(((JmsIdempotentConsumer) consumer).maxAttempts()).isEqualTo(expectedLimit);
    await().atMost(TIMEOUT).until(() -> harness.deadLetters().size() == 1);
    DeadLetteredMessage letter = harness.deadLetters().get(0);
    assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(letter.headers())
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, Integer.toString(expectedLimit))
        .containsEntry("idempotency-key", "always-fails");
    consumer.close();
    assertThat(harness.pendingCount()).isZero(); // moved by Idem, not left or dropped
    assertThat(harness.deadLetters()).hasSize(1); // and no second, reasonless copy by the broker
    return runs;
  }

  @Test
  void aBrokerLimitBelowMaxAttemptsIsWhereIdemDeadLettersWithItsReason() {
    List<Integer> runs;
    try (CapturedLog log = CapturedLog.of(JmsIdempotentConsumer.class)) {
      runs = alwaysFailing("limit-3-of-5", 3, FIVE_ATTEMPTS, 3);
      // a message that kills the process would be moved by the broker first (docs/BROKERS.md)
      assertThat(log.messages(Level.WARN)).anyMatch(m -> m.contains("max-delivery-attempts")
          && m.contains("(3) is not above the pipeline's maxAttempts (5)") && m.contains("kills the process"));
    }
    assertThat(runs).containsExactly(1, 2, 3);
    // the pipeline's own reason at the lower limit (InboundMessage.brokerAttemptLimit): the
    // detail names both limits, and the key and the exception class are on the copy
    assertThat(harness.deadLetters().get(0).headers())
        .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName());
    assertThat(harness.deadLetters().get(0).headers().get(DeadLetterReason.HEADER_DETAIL))
        .contains("attempt 3 of 3", "the broker's own limit 3 is below the retry policy's 5");
  }

  @Test
  void aBrokerLimitAboveMaxAttemptsLeavesThePipelinesLimit() {
    List<Integer> runs;
    try (CapturedLog log = CapturedLog.of(JmsIdempotentConsumer.class)) {
      runs = alwaysFailing("limit-10-of-3", 10, attempts(3), 3);
      assertThat(log.messages(Level.WARN)).noneMatch(m -> m.contains("kills the process"));
    }
    assertThat(runs).containsExactly(1, 2, 3);
    assertThat(harness.deadLetters().get(0).headers())
        .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName());
  }

  @Test
  void anotherProvidersLimitMustBeDeclared() {
    String queue = queue("declared");
    ConnectionFactory notArtemis = new OtherProvider(artemis.connectionFactory());

    assertThatThrownBy(() -> consumer(notArtemis, queue, b -> b).start())
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("brokerMaxDeliveryAttempts(n)")
        .hasMessageContaining("brokerDeadLetterQueue(name)");
    assertThatThrownBy(() -> consumer(notArtemis, queue, b -> b.brokerMaxDeliveryAttempts(3)).start())
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("declared in JmsConsumerConfig")
        .hasMessageContaining("max-delivery-attempts is 3");
    String missing = unique("missing");
    matches.add(missing);
    artemis.addressSettings(missing, AddressPolicy.deadLetterTo(queue + ".dlq").withAutoCreateQueues(false));
    assertThatThrownBy(() -> consumer(notArtemis, queue,
            b -> b.brokerMaxDeliveryAttempts(3).brokerDeadLetterQueue(missing)).start())
        .hasMessageContaining("dead-letter-address '" + missing + "' has no queue");

    JmsIdempotentConsumer declared = consumer(notArtemis, queue,
        b -> b.brokerMaxDeliveryAttempts(3).brokerDeadLetterQueue(queue + ".dlq"));
    consumer = declared;
    declared.start();
    assertThat(declared.maxAttempts()).isEqualTo(3);
  }

  /** A connection factory that is not Artemis' class, as another provider's would be. */
  private record OtherProvider(ConnectionFactory delegate) implements ConnectionFactory {
    @Override
    public Connection createConnection() throws JMSException {
      return delegate.createConnection();
    }

    @Override
    public Connection createConnection(String user, String password) throws JMSException {
      return delegate.createConnection(user, password);
    }

    @Override
    public JMSContext createContext() {
      return delegate.createContext();
    }

    @Override
    public JMSContext createContext(String user, String password) {
      return delegate.createContext(user, password);
    }

    @Override
    public JMSContext createContext(String user, String password, int sessionMode) {
      return delegate.createContext(user, password, sessionMode);
    }

    @Override
    public JMSContext createContext(int sessionMode) {
      return delegate.createContext(sessionMode);
    }
  }
}
