package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.MicrometerIdempotencyListener;
import io.idem.NonRetryableException;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The pipeline's decisions, on the in-memory store with a recording acknowledgement. */
class IdempotentConsumerPipelineTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> effects = new ArrayList<>();
  private final MessageHandler<InMemoryTransaction> recording =
      (m, tx) -> tx.onCommit(() -> effects.add(m.header("idempotency-key")));
  private final RetryPolicy threeAttempts = RetryPolicy.builder().maxAttempts(3)
      .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).jitter(0).build();

  private IdempotentConsumer.Builder<InMemoryTransaction> pipeline(MessageHandler<InMemoryTransaction> handler) {
    return IdempotentConsumer.builder(store).consumerGroup("billing").handler(handler).retryPolicy(threeAttempts);
  }

  private static InboundMessage message(String key, String payload, int attempt) {
    InboundMessage.Builder b = InboundMessage.builder("orders", payload.getBytes(StandardCharsets.UTF_8))
        .deliveryAttempt(attempt).brokerMessageId("orders-0@" + attempt);
    if (key != null) {
      b.header("idempotency-key", key);
    }
    return b.build();
  }

  @Test
  void newKeyIsProcessedThenAcked() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(recording).build().process(message("o-1", "{}", 1), ack)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(ack.calls).containsExactly("ack");
    assertThat(effects).containsExactly("o-1");
    assertThat(store.isProcessed(new IdempotencyKey("billing", "o-1", KeySource.HEADER))).isTrue();
  }

  @Test
  void duplicateIsAnOutcomeAndSkipsTheHandler() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).build();
    consumer.process(message("o-1", "{}", 1), new RecordingAcknowledgement());
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{}", 1), ack)).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(ack.calls).containsExactly("ack");
    assertThat(effects).containsExactly("o-1");
  }

  @Test
  void differentPayloadIsAConflictDeadLettered() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).build();
    consumer.process(message("o-1", "{\"amount\":1}", 1), new RecordingAcknowledgement());
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{\"amount\":2}", 1), ack)).isEqualTo(ProcessingOutcome.CONFLICT);
    assertThat(ack.calls).containsExactly("deadLetter");
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.CONFLICT);
    assertThat(ack.reason.key()).isEqualTo("o-1");
    assertThat(effects).containsExactly("o-1");
  }

  @Test
  void conflictDetectionCanBeTurnedOff() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).detectPayloadConflicts(false).build();
    consumer.process(message("o-1", "{\"sentAt\":1}", 1), new RecordingAcknowledgement());
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{\"sentAt\":2}", 1), ack)).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(ack.calls).containsExactly("ack");
  }

  @Test
  void noKeyIsDeadLetteredWithoutTouchingStoreOrHandler() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(pipeline(recording).build().process(message(null, "{}", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.NO_KEY);
    assertThat(ack.reason.detail()).contains("idempotency-key");
    assertThat(effects).isEmpty();
    assertThat(store.size()).isZero();
  }

  @Test
  void oversizedKeyIsRejectedByDefaultNeverTruncated() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    String huge = "k".repeat(100_000);
    assertThat(pipeline(recording).build().process(message(huge, "{}", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(ack.reason.detail()).contains("at most 512 characters, but was 100000");
    assertThat(store.size()).isZero();
  }

  @Test
  void oversizedKeyCanBeHashed() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).oversizedKeys(OversizedKeyPolicy.HASH).build();
    String huge = "k".repeat(1000);
    assertThat(consumer.process(message(huge, "{}", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.process(message(huge, "{}", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(consumer.process(message(huge + "x", "{}", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
  }

  @Test
  void hashingDoesNotLetForbiddenCharactersThrough() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    pipeline(recording).oversizedKeys(OversizedKeyPolicy.HASH).build()
        .process(message("k".repeat(600) + "\0", "{}", 1), ack);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
  }

  @Test
  void keysDifferingOnlyInUnpairedSurrogatesAreRejectedNotMerged() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).build();
    RecordingAcknowledgement first = new RecordingAcknowledgement();
    RecordingAcknowledgement second = new RecordingAcknowledgement();
    consumer.process(message("K\uD800", "{}", 1), first);
    consumer.process(message("K\uDC00", "{}", 1), second);
    assertThat(first.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(second.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(store.size()).isZero();
  }

  @Test
  void storeOutageBackoffGrowsWithConsecutiveFailuresAndResets() {
    java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
    ProcessedEventStore<InMemoryTransaction> flaky = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
        if (down.get()) {
          throw new StoreUnavailableException("connection refused", null);
        }
        return super.inTransaction(work);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(flaky)
        .consumerGroup("billing").handler(recording).retryPolicy(threeAttempts).build();
    List<Duration> delays = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      RecordingAcknowledgement ack = new RecordingAcknowledgement();
      consumer.process(message("o-" + i, "{}", 1), ack); // every message on its first attempt
      delays.add(ack.retryDelay);
    }
    assertThat(delays).containsExactly(Duration.ofMillis(100), Duration.ofMillis(200), Duration.ofMillis(400),
        Duration.ofMillis(800), Duration.ofSeconds(1));
    down.set(false);
    assertThat(consumer.process(message("o-0", "{}", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    down.set(true);
    RecordingAcknowledgement again = new RecordingAcknowledgement();
    consumer.process(message("o-1", "{}", 1), again);
    assertThat(again.retryDelay).isEqualTo(Duration.ofMillis(100));
  }

  @Test
  void keyWithNulIsRejected() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    pipeline(recording).build().process(message("a\0b", "{}", 1), ack);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
  }

  @Test
  void handlerFailureRollsBackAndRetriesThenDeadLettersAtMaxAttempts() {
    AtomicInteger calls = new AtomicInteger();
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      calls.incrementAndGet();
      tx.onCommit(() -> effects.add("never"));
      throw new IllegalStateException("down");
    }).build();
    RecordingAcknowledgement first = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{}", 1), first)).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(first.calls).containsExactly("retry");
    assertThat(first.retryDelay).isEqualTo(Duration.ofMillis(100));
    assertThat(consumer.process(message("o-1", "{}", 2), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.RETRY);
    RecordingAcknowledgement last = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{}", 3), last)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(last.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    assertThat(last.reason.detail()).contains("attempt 3 of 3").contains("down");
    assertThat(last.reason.exceptionClass()).isEqualTo(IllegalStateException.class.getName());
    assertThat(calls.get()).isEqualTo(3);
    assertThat(effects).isEmpty();
    assertThat(store.size()).as("the dead-letter decision only").isEqualTo(1);
    assertThat(store.isProcessed(new IdempotencyKey("billing", "o-1", KeySource.HEADER))).isFalse();
  }

  @Test
  void nonRetryableFailureDeadLettersAtOnce() {
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      throw new NonRetryableException("amount must be positive");
    }).build();
    assertThat(consumer.process(message("o-1", "{}", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE);
  }

  @Test
  void storeOutageIsRetriedAndNeverDeadLettered() {
    ProcessedEventStore<InMemoryTransaction> down = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) {
        throw new StoreUnavailableException("connection refused", null);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(down)
        .consumerGroup("billing").handler(recording).retryPolicy(threeAttempts).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{}", 50), ack)).isEqualTo(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(ack.calls).containsExactly("retryWhenStoreAvailable");
    assertThat(consumer.storeHealth().consecutiveFailures()).isEqualTo(1);
  }

  @Test
  void failingClaimIsAStoreProblemNotTheMessages() {
    ProcessedEventStore<InMemoryTransaction> broken = new DelegatingStore(store) {
      @Override
      public ClaimResult claim(InMemoryTransaction tx, IdempotencyKey key, byte[] fingerprint) {
        throw new IllegalStateException("relation \"idem_processed_events\" does not exist");
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(broken)
        .consumerGroup("billing").handler(recording).retryPolicy(threeAttempts).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", "{}", 3), ack)).isEqualTo(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(ack.calls).containsExactly("retryWhenStoreAvailable");
  }

  @Test
  void failedAckPropagatesAndRedeliveryIsADuplicate() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    ack.failAck = new IllegalStateException("channel closed");
    assertThatThrownBy(() -> consumer.process(message("o-1", "{}", 1), ack)).hasMessage("channel closed");
    assertThat(consumer.process(message("o-1", "{}", 2), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(effects).containsExactly("o-1");
  }

  @Test
  void listenersSeeStepsInOrderAndTheirFailuresAreIgnored() {
    List<String> steps = new ArrayList<>();
    IdempotencyListener tracing = new IdempotencyListener() {
      @Override public void onKey(InboundMessage m, IdempotencyKey k) { steps.add("key"); }
      @Override public void beforeClaim(InboundMessage m, IdempotencyKey k) { steps.add("claim"); throw new IllegalStateException("listener bug"); }
      @Override public void afterHandler(InboundMessage m, IdempotencyKey k) { steps.add("handler"); }
      @Override public void afterCommit(InboundMessage m, IdempotencyKey k, ProcessingOutcome p) { steps.add("commit:" + p); }
      @Override public void onOutcome(InboundMessage m, IdempotencyKey k, ProcessingOutcome o, Duration e) { steps.add("outcome:" + o); }
    };
    pipeline(recording).listener(tracing).build().process(message("o-1", "{}", 1), new RecordingAcknowledgement());
    assertThat(steps).containsExactly("key", "claim", "handler", "commit:PROCESSED", "outcome:PROCESSED");
    assertThat(effects).containsExactly("o-1");
  }

  @Test
  void brokerIdFallbackIsCounted() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(recording)
        .keyExtractor(IdempotencyKeyExtractor.defaults().orElse(IdempotencyKeyExtractor.brokerMessageId()))
        .listener(new MicrometerIdempotencyListener(registry, "billing"))
        .build();
    consumer.process(message(null, "{}", 1), new RecordingAcknowledgement());
    consumer.process(message("o-1", "{}", 1), new RecordingAcknowledgement());
    assertThat(registry.get("idem.key.fallback").counter().count()).isEqualTo(1.0);
    assertThat(registry.get("idem.messages").tag("outcome", "PROCESSED").timer().count()).isEqualTo(2);
  }

  @Test
  void builderValidation() {
    assertThatThrownBy(() -> IdempotentConsumer.builder(store).handler(recording).build())
        .hasMessage("consumerGroup must be set, but was not");
    assertThatThrownBy(() -> IdempotentConsumer.builder(store).consumerGroup("g").build())
        .hasMessage("handler must be set, but was not");
  }

  /** Forwards to a real store; tests override one method to inject a failure. */
}
