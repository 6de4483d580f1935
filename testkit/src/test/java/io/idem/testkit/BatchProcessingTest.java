package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionWork;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link IdempotentConsumer#processBatch}: one transaction per batch, and its failure paths. */
class BatchProcessingTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> effects = new ArrayList<>();
  private final List<String> handled = new ArrayList<>();
  private final AtomicInteger transactions = new AtomicInteger();
  private final AtomicInteger claimAlls = new AtomicInteger();
  private final RetryPolicy policy = RetryPolicy.builder().maxAttempts(3)
      .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).jitter(0).build();

  /** The in-memory store, counting transactions and multi-row claims. */
  private final ProcessedEventStore<InMemoryTransaction> counting = new DelegatingStore(store) {
    @Override
    public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
      transactions.incrementAndGet();
      return super.inTransaction(work);
    }

    @Override
    public List<ClaimResult> claimAll(
        InMemoryTransaction tx, List<IdempotencyKey> keys, List<byte[]> fingerprints) {
      claimAlls.incrementAndGet();
      return store.claimAll(tx, keys, fingerprints);
    }
  };

  private static InboundMessage message(String key, String payload) {
    InboundMessage.Builder b = InboundMessage.builder("orders", payload.getBytes(StandardCharsets.UTF_8));
    if (key != null) {
      b.header("idempotency-key", key);
    }
    return b.build();
  }

  /** A handler that records each new message and fails on the key "poison". */
  private IdempotentConsumer.Builder<InMemoryTransaction> pipeline(ProcessedEventStore<InMemoryTransaction> on) {
    return IdempotentConsumer.builder(on).consumerGroup("billing").retryPolicy(policy)
        .handler((m, tx) -> {
          String k = m.header("idempotency-key");
          handled.add(k);
          if (k.startsWith("poison")) {
            throw new IllegalStateException("poison " + k);
          }
          tx.onCommit(() -> effects.add(k));
        });
  }

  private static List<RecordingAcknowledgement> acks(int n) {
    List<RecordingAcknowledgement> acks = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      acks.add(new RecordingAcknowledgement());
    }
    return acks;
  }

  private static List<String> calls(List<RecordingAcknowledgement> acks) {
    return acks.stream().map(a -> String.join(",", a.calls)).toList();
  }

  @SuppressWarnings("unchecked")
  private static List<Acknowledgement> asAcks(List<RecordingAcknowledgement> acks) {
    return (List<Acknowledgement>) (List<?>) acks;
  }

  @Test
  void mixedBatchIsOneTransactionSettledInOrder() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(counting).build();
    consumer.process(message("dup", "{}"), new RecordingAcknowledgement());
    consumer.process(message("conflict", "{\"v\":1}"), new RecordingAcknowledgement());
    transactions.set(0);
    effects.clear();
    List<InboundMessage> batch = List.of(message("n-1", "{}"), message(null, "{}"), message("dup", "{}"),
        message("conflict", "{\"v\":2}"), message("n-2", "{}"), message("n-1", "{}"), message("n-1", "{\"x\":1}"));
    List<RecordingAcknowledgement> acks = acks(batch.size());
    List<ProcessingOutcome> outcomes = consumer.processBatch(batch, asAcks(acks));
    assertThat(outcomes).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DEAD_LETTERED,
        ProcessingOutcome.DUPLICATE, ProcessingOutcome.CONFLICT, ProcessingOutcome.PROCESSED,
        ProcessingOutcome.DUPLICATE, ProcessingOutcome.CONFLICT);
    assertThat(calls(acks)).containsExactly("ack", "deadLetter", "ack", "deadLetter", "ack", "ack", "deadLetter");
    assertThat(acks.get(1).reason.cause()).isEqualTo(DeadLetterCause.NO_KEY);
    assertThat(effects).containsExactly("n-1", "n-2");
    assertThat(transactions.get()).isEqualTo(1);
    assertThat(claimAlls.get()).isEqualTo(1);
  }

  @Test
  void listenersHearEachMessageAsInProcess() {
    List<String> steps = new ArrayList<>();
    IdempotencyListener tracing = new IdempotencyListener() {
      @Override public void onKey(InboundMessage m, IdempotencyKey k) { steps.add("key:" + k.value()); }
      @Override public void beforeClaim(InboundMessage m, IdempotencyKey k) { steps.add("claim:" + k.value()); }
      @Override public void afterHandler(InboundMessage m, IdempotencyKey k) { steps.add("handler:" + k.value()); }
      @Override public void afterCommit(InboundMessage m, IdempotencyKey k, ProcessingOutcome p) { steps.add("commit:" + k.value()); }
      @Override public void onOutcome(InboundMessage m, IdempotencyKey k, ProcessingOutcome o, Duration e) {
        steps.add("outcome:" + (k == null ? "-" : k.value()) + ":" + o);
      }
    };
    pipeline(store).listener(tracing).build().processBatch(
        List.of(message("a", "{}"), message(null, "{}"), message("b", "{}")), asAcks(acks(3)));
    assertThat(steps).containsExactly("key:a", "key:b", "claim:a", "claim:b", "handler:a", "handler:b",
        "commit:a", "outcome:a:PROCESSED", "outcome:-:DEAD_LETTERED", "commit:b", "outcome:b:PROCESSED");
  }

  @Test
  void failureInTheMiddleOrderedAppliesTheOnesBeforeOnceRetriesItAndLeavesTheRestNotStarted() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(store).build();
    List<InboundMessage> batch = List.of(message("a", "{}"), message("b", "{}"), message("poison", "{}"),
        message("c", "{}"), message("d", "{}"));
    List<RecordingAcknowledgement> acks = acks(batch.size());
    BatchResult result = consumer.processBatch(batch, asAcks(acks), BatchOrder.ORDERED);
    assertThat(result.outcomes()).containsExactly(
        ProcessingOutcome.PROCESSED, ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY);
    assertThat(result.stoppedAt()).isEqualTo(3);
    assertThat(result.isComplete()).isFalse();
    assertThat(result.notStarted(batch)).containsExactly(batch.get(3), batch.get(4));
    assertThat(calls(acks)).containsExactly("ack", "ack", "retry", "", "");
    assertThat(effects).containsExactly("a", "b");
    // the batch ran a, b, poison (rolled back); the redo a and b again, while poison's run in the
    // batch was its attempt: settled as a handler failure without a second run
    assertThat(handled).containsExactly("a", "b", "poison", "a", "b");
    assertThat(store.isProcessed(new IdempotencyKey("billing", "c", io.idem.KeySource.HEADER))).isFalse();
  }

  @Test
  void failureInTheMiddleUnorderedProcessesEveryMessage() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(store).build();
    List<InboundMessage> batch = List.of(message("a", "{}"), message("poison", "{}"), message("c", "{}"));
    List<RecordingAcknowledgement> acks = acks(batch.size());
    BatchResult result = consumer.processBatch(batch, asAcks(acks), BatchOrder.UNORDERED);
    assertThat(result.outcomes()).containsExactly(
        ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY, ProcessingOutcome.PROCESSED);
    assertThat(result.isComplete()).isTrue();
    assertThat(calls(acks)).containsExactly("ack", "retry", "ack");
    assertThat(effects).containsExactly("a", "c");
    assertThat(handled).containsExactly("a", "poison", "a", "c"); // c never ran in the failed batch
  }

  @Test
  void aMessageThatAlwaysFailsRunsItsHandlerOncePerAttemptInBatchesToo() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(store).build();
    List<String> lastCalls = List.of();
    for (int attempt = 1; attempt <= policy.maxAttempts(); attempt++) {
      List<InboundMessage> batch = List.of(message("a-" + attempt, "{}"),
          InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
              .header("idempotency-key", "poison").deliveryAttempt(attempt).build());
      List<RecordingAcknowledgement> acks = acks(batch.size());
      consumer.processBatch(batch, asAcks(acks), BatchOrder.UNORDERED);
      lastCalls = calls(acks);
    }
    assertThat(handled.stream().filter("poison"::equals)).as("poison's handler runs").hasSize(policy.maxAttempts());
    assertThat(lastCalls).containsExactly("ack", "deadLetter");
    assertThat(effects).containsExactly("a-1", "a-2", "a-3");
  }

  @Test
  void aFailureAtCommitIsNobodysRunAndIsRedoneWhole() {
    // a deferred check at COMMIT: no handler was running, so every message is redone on its own
    AtomicInteger commits = new AtomicInteger();
    ProcessedEventStore<InMemoryTransaction> failingFirstCommit = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
        return super.inTransaction(tx -> {
          T result = work.run(tx);
          if (commits.incrementAndGet() == 1) {
            throw new IllegalStateException("deferred constraint at COMMIT");
          }
          return result;
        });
      }
    };
    List<InboundMessage> batch = List.of(message("a", "{}"), message("b", "{}"));
    List<RecordingAcknowledgement> acks = acks(batch.size());
    pipeline(failingFirstCommit).build().processBatch(batch, asAcks(acks), BatchOrder.ORDERED);
    assertThat(calls(acks)).containsExactly("ack", "ack");
    assertThat(handled).containsExactly("a", "b", "a", "b");
  }

  @Test
  void storeOutageAnswersEveryMessageWithoutRunningTheHandler() {
    ProcessedEventStore<InMemoryTransaction> down = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) {
        transactions.incrementAndGet();
        throw new StoreUnavailableException("connection refused", null);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(down).build();
    List<InboundMessage> batch = List.of(message("a", "{}"), message(null, "{}"), message("b", "{}"));
    List<RecordingAcknowledgement> acks = acks(batch.size());
    BatchResult result = consumer.processBatch(batch, asAcks(acks), BatchOrder.UNORDERED);
    assertThat(result.outcomes()).containsExactly(ProcessingOutcome.RETRY_STORE_UNAVAILABLE,
        ProcessingOutcome.DEAD_LETTERED, ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(calls(acks)).containsExactly("retryWhenStoreAvailable", "deadLetter", "retryWhenStoreAvailable");
    assertThat(acks.get(0).retryDelay).isEqualTo(Duration.ofMillis(100));
    assertThat(acks.get(2).retryDelay).isEqualTo(Duration.ofMillis(100)); // one outage, one backoff
    assertThat(handled).isEmpty();
    assertThat(transactions.get()).isEqualTo(1); // no redo one by one
    assertThat(consumer.storeHealth().consecutiveFailures()).isEqualTo(1);

    BatchResult ordered = consumer.processBatch(batch, asAcks(acks(3)), BatchOrder.ORDERED);
    assertThat(ordered.outcomes()).containsExactly(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(ordered.stoppedAt()).isEqualTo(1);
  }

  @Test
  void transactionRetryAnswersEveryMessageWithoutRedo() {
    ProcessedEventStore<InMemoryTransaction> deadlocked = new DelegatingStore(store) {
      @Override
      public List<ClaimResult> claimAll(InMemoryTransaction tx, List<IdempotencyKey> keys, List<byte[]> fps) {
        throw new TransactionRetryException("deadlock detected", null);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(deadlocked).build();
    List<RecordingAcknowledgement> acks = acks(2);
    assertThat(consumer.processBatch(List.of(message("a", "{}"), message("b", "{}")), asAcks(acks)))
        .containsOnly(ProcessingOutcome.RETRY_TRANSACTION);
    assertThat(calls(acks)).containsOnly("retryWhenStoreAvailable");
    assertThat(handled).isEmpty();
    assertThat(store.size()).isZero();
  }

  @Test
  void failingMultiRowClaimIsTheStoresProblem() {
    ProcessedEventStore<InMemoryTransaction> broken = new DelegatingStore(store) {
      @Override
      public List<ClaimResult> claimAll(InMemoryTransaction tx, List<IdempotencyKey> keys, List<byte[]> fps) {
        throw new IllegalStateException("relation does not exist");
      }
    };
    List<RecordingAcknowledgement> acks = acks(2);
    assertThat(pipeline(broken).build().processBatch(List.of(message("a", "{}"), message("b", "{}")), asAcks(acks)))
        .containsOnly(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(handled).isEmpty();
  }

  @Test
  void batchHandlerGetsTheNewMessagesOnceAndOneAtATimeInTheRedo() {
    List<List<String>> calls = new ArrayList<>();
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(store)
        .consumerGroup("billing").retryPolicy(policy)
        .batchHandler((List<KeyedMessage> news, InMemoryTransaction tx) -> {
          List<String> keys = news.stream().map(k -> k.key().value()).toList();
          calls.add(keys);
          if (keys.contains("poison")) {
            throw new IllegalStateException("poison");
          }
          tx.onCommit(() -> effects.addAll(keys));
        }).build();
    consumer.process(message("dup", "{}"), new RecordingAcknowledgement());
    assertThat(calls).containsExactly(List.of("dup"));

    calls.clear();
    List<RecordingAcknowledgement> acks = acks(3);
    assertThat(consumer.processBatch(List.of(message("a", "{}"), message("dup", "{}"), message("b", "{}")), asAcks(acks)))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE, ProcessingOutcome.PROCESSED);
    assertThat(calls).containsExactly(List.of("a", "b"));

    calls.clear();
    List<RecordingAcknowledgement> redo = acks(3);
    BatchResult result = consumer.processBatch(
        List.of(message("c", "{}"), message("poison", "{}"), message("d", "{}")), asAcks(redo), BatchOrder.ORDERED);
    assertThat(calls).containsExactly(List.of("c", "poison", "d"), List.of("c"), List.of("poison"));
    assertThat(result.outcomes()).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY);
    assertThat(effects).containsExactly("dup", "a", "b", "c");
  }

  @Test
  void ackFailureOrderedStopsAndRethrowsUnorderedSettlesTheRest() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(store).build();
    List<RecordingAcknowledgement> ordered = acks(3);
    ordered.get(1).failAck = new IllegalStateException("channel closed");
    assertThatThrownBy(() -> consumer.processBatch(
            List.of(message("a", "{}"), message("b", "{}"), message("c", "{}")), asAcks(ordered), BatchOrder.ORDERED))
        .hasMessage("channel closed");
    assertThat(calls(ordered)).containsExactly("ack", "ack", "");

    List<RecordingAcknowledgement> unordered = acks(3);
    unordered.get(0).failAck = new IllegalStateException("channel closed");
    assertThatThrownBy(() -> consumer.processBatch(
            List.of(message("x", "{}"), message("y", "{}"), message("z", "{}")), asAcks(unordered)))
        .hasMessage("channel closed");
    assertThat(calls(unordered)).containsExactly("ack", "ack", "ack");
    assertThat(effects).containsExactly("a", "b", "c", "x", "y", "z");
  }

  @Test
  void emptyAndKeylessOnlyBatchesNeedNoTransaction() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline(counting).build();
    assertThat(consumer.processBatch(List.of(), List.of())).isEmpty();
    List<RecordingAcknowledgement> acks = acks(2);
    assertThat(consumer.processBatch(List.of(message(null, "{}"), message(null, "{}")), asAcks(acks)))
        .containsOnly(ProcessingOutcome.DEAD_LETTERED);
    assertThat(transactions.get()).isZero();
    assertThatThrownBy(() -> consumer.processBatch(List.of(message("a", "{}")), List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theInterfaceDefaultLoopsProcessAndStopsInOrder() {
    IdempotentConsumer<InMemoryTransaction> real = pipeline(store).build();
    IdempotentConsumer<InMemoryTransaction> looping = new IdempotentConsumer<>() {
      @Override public ProcessingOutcome process(InboundMessage m, Acknowledgement a) { return real.process(m, a); }
      @Override public String consumerGroup() { return real.consumerGroup(); }
      @Override public RetryPolicy retryPolicy() { return real.retryPolicy(); }
      @Override public io.idem.StoreHealth storeHealth() { return real.storeHealth(); }
    };
    BatchResult result = looping.processBatch(
        List.of(message("a", "{}"), message("poison", "{}"), message("c", "{}")), asAcks(acks(3)), BatchOrder.ORDERED);
    assertThat(result.outcomes()).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY);
    assertThat(handled).containsExactly("a", "poison");
  }
}
