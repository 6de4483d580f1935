package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotentConsumer;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Outbound;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 10, cases 1 and 2, end to end on each broker with {@code maxAttempts(3)}: what the
 * handler's own work raises is the message's failure — a counted attempt, then a dead letter with
 * the reason — never a store outage retried for ever without counting.
 *
 * <ul>
 *   <li>A handler whose exception holds a {@link ConnectException} in its cause chain (a payment
 *       service that is down) is called exactly 3 times and dead-lettered with cause
 *       {@code MAX_ATTEMPTS_EXCEEDED}, the failure named on the copy; no outcome is
 *       {@code RETRY_STORE_UNAVAILABLE}.
 *   <li>A handler whose insert violates a {@code UNIQUE … DEFERRABLE INITIALLY DEFERRED}
 *       constraint (the error comes at COMMIT) is dead-lettered {@code NON_RETRYABLE} after exactly
 *       1 call; with {@code retryIntegrityViolations(true)}, {@code MAX_ATTEMPTS_EXCEEDED} after
 *       exactly 3.
 * </ul>
 * In every case the handler's writes are rolled back: no effect, no processed marker.
 */
class HandlerFailuresAreCountedAttemptsIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final String KEY = Outbound.KEY_HEADER;

  private DemoBroker broker;
  private ItDatabase db;
  private final List<BrokerConsumer> consumers = new ArrayList<>();
  private final List<String> destinations = new ArrayList<>();

  @AfterEach
  void tearDown() {
    consumers.forEach(BrokerConsumer::close);
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      destinations.forEach(broker::deleteDestination);
      broker.close();
    }
  }

  private static RetryPolicy.Builder threeAttempts() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void aHandlerFailureWithAConnectExceptionCauseIsCountedAndDeadLetteredAfterMaxAttempts(String name)
      throws Exception {
    open(name, "connect");
    String key = UUID.randomUUID().toString().substring(0, 8) + "-payment";
    Outcome outcome = runOne(name, key, threeAttempts().build(), (message, session) -> {
      record(session, message);
      throw new IllegalStateException("payment service call failed",
          new ConnectException("Connection refused (payment-service:8443)"));
    });

    assertThat(outcome.calls).as("handler calls").isEqualTo(3);
    assertThat(outcome.outcomes.count(ProcessingOutcome.RETRY)).isEqualTo(2);
    assertThat(outcome.outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE)).isZero();
    assertThat(outcome.outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isEqualTo(1);
    assertThat(outcome.outcomes.deadLetters()).singleElement()
        .satisfies(r -> assertThat(r.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED));
    assertThat(outcome.copy.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(outcome.copy.detail()).contains("attempt 3 of 3").contains("payment service call failed")
        .contains("ConnectException");
    assertThat(outcome.copy.headers())
        .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName());
    assertThat(db.effects(outcome.key)).isZero();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void aDeferredConstraintFailingAtCommitIsNonRetryableByDefaultAndCountedWhenRetried(String name)
      throws Exception {
    open(name, "deferred");
    db.exec("CREATE TABLE it_orders (order_id text NOT NULL,"
        + " CONSTRAINT it_orders_once UNIQUE (order_id) DEFERRABLE INITIALLY DEFERRED)");
    MessageHandler<SqlSession> placeOrder = (message, session) -> {
      record(session, message);
      try (PreparedStatement ps = session.getConnection()
          .prepareStatement("INSERT INTO it_orders (order_id) VALUES (?)")) {
        ps.setString(1, message.header(KEY));
        ps.executeUpdate(); // accepted here: the unique check waits for COMMIT
      }
    };

    String run = UUID.randomUUID().toString().substring(0, 8);
    db.exec("INSERT INTO it_orders (order_id) VALUES ('" + run + "-order-default')");
    Outcome byDefault = runOne(name, run + "-order-default", threeAttempts().build(), placeOrder);
    assertThat(byDefault.calls).as("handler calls, integrity violations not retried").isEqualTo(1);
    assertThat(byDefault.copy.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
    assertThat(byDefault.copy.detail()).contains("it_orders_once");
    assertThat(byDefault.outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE)).isZero();
    assertThat(byDefault.outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isEqualTo(1);
    assertThat(db.effects(byDefault.key)).isZero();

    db.exec("INSERT INTO it_orders (order_id) VALUES ('" + run + "-order-retried')");
    Outcome retried = runOne(name, run + "-order-retried",
        threeAttempts().retryIntegrityViolations(true).build(), placeOrder);
    assertThat(retried.calls).as("handler calls, integrity violations retried").isEqualTo(3);
    assertThat(retried.copy.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(retried.copy.detail()).contains("attempt 3 of 3").contains("it_orders_once");
    assertThat(retried.outcomes.count(ProcessingOutcome.RETRY)).isEqualTo(2);
    assertThat(retried.outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE)).isZero();
    assertThat(db.effects(retried.key)).isZero();
  }

  private void open(String name, String label) throws Exception {
    broker = DemoBrokers.create(name);
    System.out.println("[it] " + broker.start());
    db = ItDatabase.direct("it_handler_" + label + "_" + name);
  }

  /** The test's effect row, in the handler's transaction: it must roll back with the failure. */
  private static void record(SqlSession session, io.idem.InboundMessage message) throws Exception {
    try (PreparedStatement ps = session.getConnection().prepareStatement(
        "INSERT INTO it_effects (idem_key, attempt, payload_length) VALUES (?, ?, ?)")) {
      ps.setString(1, message.header(KEY));
      ps.setInt(2, message.deliveryAttempt());
      ps.setInt(3, message.payload().length);
      ps.executeUpdate();
    }
  }

  private record Outcome(String key, int calls, OutcomeRecorder outcomes, DeadLetteredMessage copy) {}

  /**
   * Publishes one message keyed {@code key} to a fresh destination, consumes it through
   * {@code handler} until it is dead-lettered and nothing is pending, and returns what happened.
   */
  private Outcome runOne(String name, String key, RetryPolicy policy, MessageHandler<SqlSession> handler) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String destination = "idem-it-handler-fails-" + name + "-" + run;
    destinations.add(destination);
    broker.createDestination(destination);
    String group = "idem-it-handler-fails-" + run;
    String fullKey = key;
    AtomicInteger calls = new AtomicInteger();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .handler((message, session) -> {
          calls.incrementAndGet();
          handler.handle(message, session);
        })
        .retryPolicy(policy)
        .listener(outcomes)
        .build();
    BrokerConsumer consumer = broker.consumer(destination, pipeline);
    consumers.add(consumer);
    consumer.start();
    broker.publish(destination, List.of(Outbound.keyed(fullKey,
        ("{\"orderId\":\"" + fullKey + "\"}").getBytes(StandardCharsets.UTF_8))));

    await(fullKey + " dead-lettered, nothing pending").atMost(TIMEOUT)
        .until(() -> broker.deadLettered(destination) >= 1 && broker.pending(destination, group) == 0);
    await(fullKey + " outcome recorded").atMost(TIMEOUT)
        .until(() -> outcomes.count(ProcessingOutcome.DEAD_LETTERED) >= 1);
    List<DeadLetteredMessage> dead = broker.readDeadLetters(destination);
    assertThat(dead).as("dead letters of " + fullKey).hasSize(1);
    assertThat(dead.get(0).headers()).containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, group)
        .containsEntry(DeadLetterReason.HEADER_KEY, fullKey);
    consumer.close();
    return new Outcome(fullKey, calls.get(), outcomes, dead.get(0));
  }
}
