package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Attempts that survive the process (docs/FAILURES.md): a delivery the adapter flags as an
 * unaccounted redelivery is counted in the store before its handler runs; past maxAttempts it is
 * dead-lettered without running the handler; a first delivery writes nothing. On the in-memory
 * store; an Error thrown out of the pipeline stands for the process dying during the handler.
 */
class AttemptsPipelineTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> effects = new ArrayList<>();
  private final AtomicInteger runs = new AtomicInteger();
  private final RetryPolicy threeAttempts = RetryPolicy.builder().maxAttempts(3)
      .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).jitter(0).build();
  private static final IdempotencyKey POISON = new IdempotencyKey("billing", "poison", KeySource.HEADER);

  private IdempotentConsumer<InMemoryTransaction> pipeline(MessageHandler<InMemoryTransaction> handler) {
    return IdempotentConsumer.builder(store).consumerGroup("billing").handler(handler)
        .retryPolicy(threeAttempts).build();
  }

  private final MessageHandler<InMemoryTransaction> killsOnPoison = (m, tx) -> {
    runs.incrementAndGet();
    if ("poison".equals(m.header("idempotency-key"))) {
      throw new OutOfMemoryError("stands for a process death during the handler");
    }
    tx.onCommit(() -> effects.add(m.header("idempotency-key")));
  };

  private static InboundMessage delivery(String key, boolean unaccounted, int brokerAttempt) {
    return InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).brokerMessageId("orders@" + key)
        .deliveryAttempt(brokerAttempt).unaccountedRedelivery(unaccounted).build();
  }

  @Test
  void aFirstDeliveryWritesNoAttemptRow() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(killsOnPoison).process(delivery("o-1", false, 1), ack))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(store.attempts(new IdempotencyKey("billing", "o-1", KeySource.HEADER))).isZero();
    assertThatThrownBy(() -> pipeline(killsOnPoison).process(delivery("poison", false, 1),
        new RecordingAcknowledgement())).isInstanceOf(OutOfMemoryError.class);
    assertThat(store.attempts(POISON)).as("a first delivery that dies writes nothing").isZero();
  }

  @Test
  void aMessageThatKillsTheProcessIsDeadLetteredAfterMaxAttemptsDeathsWithoutRunningAgain() {
    // every "restart" is a new pipeline; the broker only says "redelivered" (a classic queue)
    assertThatThrownBy(() -> pipeline(killsOnPoison).process(delivery("poison", false, 1),
        new RecordingAcknowledgement())).isInstanceOf(OutOfMemoryError.class);
    for (int death = 2; death <= 3; death++) {
      assertThatThrownBy(() -> pipeline(killsOnPoison).process(delivery("poison", true, 2),
          new RecordingAcknowledgement())).isInstanceOf(OutOfMemoryError.class);
      assertThat(store.attempts(POISON)).as("counted and committed before the handler").isEqualTo(death - 1);
    }
    assertThat(runs).hasValue(3);
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(killsOnPoison).process(delivery("poison", true, 2), ack))
        .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(runs).as("not run a fourth time").hasValue(3);
    assertThat(ack.calls).containsExactly("deadLetter");
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    assertThat(ack.reason.attempt()).isEqualTo(4);
    assertThat(ack.reason.detail()).contains("the process died").contains("3 time(s)");
    assertThat(store.attempts(POISON)).as("a replay starts afresh").isZero();
    assertThat(store.isProcessed(POISON)).isFalse();
  }

  @Test
  void aBrokerCounterRaisedByPrefetchedRedeliveriesDoesNotDeadLetterAGoodMessage() {
    // a quorum queue's x-delivery-count went up with each death of the poison ahead of it
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(killsOnPoison).process(delivery("good", true, 7), ack))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(effects).containsExactly("good");
    assertThat(store.attempts(new IdempotencyKey("billing", "good", KeySource.HEADER)))
        .as("cleared with the commit").isZero();
  }

  @Test
  void aDuplicateRedeliveredPastMaxAttemptsIsAckedAndItsCountCleared() {
    IdempotencyKey done = new IdempotencyKey("billing", "done", KeySource.HEADER);
    pipeline(killsOnPoison).process(delivery("done", false, 1), new RecordingAcknowledgement());
    for (int i = 0; i < 5; i++) {
      store.startAttempt(done);
    }
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(killsOnPoison).process(delivery("done", true, 2), ack))
        .isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(ack.calls).containsExactly("ack");
    assertThat(store.attempts(done)).isZero();
  }

  @Test
  void aCountedHandlerFailureIsChargedTheCountedRuns() {
    AtomicInteger failures = new AtomicInteger();
    MessageHandler<InMemoryTransaction> failing = (m, tx) -> {
      failures.incrementAndGet();
      throw new IllegalStateException("boom");
    };
    IdempotencyKey key = new IdempotencyKey("billing", "f", KeySource.HEADER);
    store.startAttempt(key); // one counted run died before: this failing run is attempt 2 of 3
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(failing).process(delivery("f", true, 2), ack))
        .as("attempt 2 (the counted runs), not 3 (the uncertain first delivery too)")
        .isEqualTo(ProcessingOutcome.RETRY);
    assertThat(failures).hasValue(1);
    assertThat(store.attempts(key)).as("kept: the next flagged delivery counts on").isEqualTo(2);
  }

  /**
   * A delivery released unstarted — prefetched by a consumer that was closed cleanly, or that died
   * in another message's handler — comes back flagged as a possible redelivery. Its first counted
   * run always runs, and a failure of it is its attempt 1, as without the restart: with
   * maxAttempts 1 it is applied (not refused unrun), with maxAttempts 2 a first failure is retried.
   */
  @Test
  void aDeliveryReleasedUnstartedIsNeitherRefusedUnrunNorChargedAnAttemptItNeverHad() {
    RetryPolicy oneAttempt = RetryPolicy.builder().maxAttempts(1).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofSeconds(1)).jitter(0).build();
    RecordingAcknowledgement applied = new RecordingAcknowledgement();
    assertThat(IdempotentConsumer.builder(store).consumerGroup("billing").handler(killsOnPoison)
        .retryPolicy(oneAttempt).build().process(delivery("released", true, 2), applied))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(effects).containsExactly("released");

    RetryPolicy twoAttempts = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofSeconds(1)).jitter(0).build();
    AtomicInteger failures = new AtomicInteger();
    MessageHandler<InMemoryTransaction> failsOnce = (m, tx) -> {
      if (failures.getAndIncrement() == 0) {
        throw new IllegalStateException("a first failure");
      }
    };
    RecordingAcknowledgement retried = new RecordingAcknowledgement();
    assertThat(IdempotentConsumer.builder(store).consumerGroup("billing").handler(failsOnce)
        .retryPolicy(twoAttempts).build().process(delivery("flaky", true, 2), retried))
        .as("attempt 1 of 2, not 2 of 2").isEqualTo(ProcessingOutcome.RETRY);
  }

  /**
   * Possible redeliveries run one at a time in the JVM (every pipeline included), so that a death
   * during one is charged to it alone, not to the messages redelivered with it and run beside it
   * (an {@code @SqsListener} runs ten at once); first deliveries still run side by side.
   */
  @Test
  void possibleRedeliveriesRunOneAtATimeAndFirstDeliveriesSideBySide() throws Exception {
    java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();
    MessageHandler<InMemoryTransaction> handler = (m, tx) -> {
      most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
      try {
        Thread.sleep(150); // long enough for the other to overlap, were it let in
      } finally {
        inFlight.decrementAndGet();
      }
    };
    java.util.function.Function<InboundMessage, java.util.concurrent.CompletableFuture<ProcessingOutcome>> async =
        d -> java.util.concurrent.CompletableFuture.supplyAsync(() -> IdempotentConsumer.builder(store)
            .consumerGroup("billing").handler(handler).retryPolicy(threeAttempts).build()
            .process(d, new RecordingAcknowledgement()));
    var a = async.apply(delivery("again-a", true, 2));
    var b = async.apply(delivery("again-b", true, 2));
    assertThat(a.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(b.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(most).as("possible redeliveries in their handlers at once").hasValue(1);

    java.util.concurrent.CountDownLatch both = new java.util.concurrent.CountDownLatch(2);
    MessageHandler<InMemoryTransaction> firsts = (m, tx) -> {
      both.countDown();
      assertThat(both.await(10, java.util.concurrent.TimeUnit.SECONDS)).as("side by side").isTrue();
    };
    var c = java.util.concurrent.CompletableFuture.supplyAsync(() -> IdempotentConsumer.builder(store)
        .consumerGroup("billing").handler(firsts).build().process(delivery("first-c", false, 1), new RecordingAcknowledgement()));
    var d = java.util.concurrent.CompletableFuture.supplyAsync(() -> IdempotentConsumer.builder(store)
        .consumerGroup("billing").handler(firsts).build().process(delivery("first-d", false, 1), new RecordingAcknowledgement()));
    assertThat(c.get(15, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(d.get(15, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(ProcessingOutcome.PROCESSED);
  }

  /**
   * With maxAttempts 1 a process-killing message gets two deaths, not one: its first counted run
   * always runs, since Idem cannot tell a first delivery that died from one only prefetched.
   */
  @Test
  void withOneAttemptAProcessKillingMessageIsDeadLetteredAfterTwoDeaths() {
    RetryPolicy oneAttempt = RetryPolicy.builder().maxAttempts(1).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofSeconds(1)).jitter(0).build();
    java.util.function.Supplier<IdempotentConsumer<InMemoryTransaction>> restarted = () ->
        IdempotentConsumer.builder(store).consumerGroup("billing").handler(killsOnPoison).retryPolicy(oneAttempt).build();
    assertThatThrownBy(() -> restarted.get().process(delivery("poison", false, 1), new RecordingAcknowledgement()))
        .isInstanceOf(OutOfMemoryError.class);
    assertThatThrownBy(() -> restarted.get().process(delivery("poison", true, 2), new RecordingAcknowledgement()))
        .isInstanceOf(OutOfMemoryError.class);
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(restarted.get().process(delivery("poison", true, 2), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(runs).hasValue(2);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }

  @Test
  void aBatchHoldingAFlaggedDeliveryGoesOneByOneSoThePoisonIsCountedAndDiesAlone() {
    for (int i = 0; i < 3; i++) {
      store.startAttempt(POISON); // three deaths already counted
    }
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(killsOnPoison);
    List<RecordingAcknowledgement> acks = List.of(new RecordingAcknowledgement(),
        new RecordingAcknowledgement(), new RecordingAcknowledgement());
    List<ProcessingOutcome> outcomes = consumer.processBatch(
        List.of(delivery("b-1", true, 2), delivery("poison", true, 2), delivery("b-2", false, 1)),
        List.copyOf(acks), io.idem.BatchOrder.ORDERED).outcomes();
    assertThat(outcomes).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DEAD_LETTERED,
        ProcessingOutcome.PROCESSED);
    assertThat(runs).as("the poison's handler not run again").hasValue(2);
    assertThat(effects).containsExactly("b-1", "b-2");
    assertThat(acks.get(1).reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }
}
