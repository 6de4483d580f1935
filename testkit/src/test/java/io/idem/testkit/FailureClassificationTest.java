package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.MicrometerIdempotencyListener;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.TransactionWork;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The pipeline classifies each failure once, by who failed (docs/FAILURES.md): a handler's failure
 * is a counted attempt whatever its cause chain holds; only the store's own verdict (the exception
 * type it throws) makes an uncounted retry; an interrupt is a shutdown.
 */
class FailureClassificationTest {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final RetryPolicy threeAttempts = RetryPolicy.builder().maxAttempts(3)
      .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).jitter(0).build();

  @AfterEach
  void clearInterrupt() {
    Thread.interrupted();
  }

  private IdempotentConsumer<InMemoryTransaction> pipeline(MessageHandler<InMemoryTransaction> handler) {
    return IdempotentConsumer.builder(store).consumerGroup("billing").handler(handler)
        .retryPolicy(threeAttempts).build();
  }

  private static InboundMessage message(String key, int attempt) {
    return InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .deliveryAttempt(attempt).header("idempotency-key", key).build();
  }

  /** Issue 10 case 1: the handler's own HTTP call was refused — not a database outage. */
  @Test
  void handlerFailureWithAConnectExceptionCauseIsACountedAttemptThenADeadLetter() {
    AtomicInteger calls = new AtomicInteger();
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      calls.incrementAndGet();
      throw new UncheckedIOException("payment service",
          new ConnectException("Connection refused"));
    });
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    RecordingAcknowledgement last = null;
    for (int attempt = 1; attempt <= 3; attempt++) {
      last = new RecordingAcknowledgement();
      outcomes.add(consumer.process(message("o-1", attempt), last));
    }
    assertThat(outcomes).containsExactly(
        ProcessingOutcome.RETRY, ProcessingOutcome.RETRY, ProcessingOutcome.DEAD_LETTERED);
    assertThat(calls.get()).isEqualTo(3);
    assertThat(last.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    assertThat(last.reason.detail()).contains("attempt 3 of 3").contains("payment service");
    assertThat(consumer.storeHealth().isAvailable()).isTrue();
  }

  /** Issue 10 case 2 at the pipeline: an integrity violation (SQLSTATE 23) does not heal. */
  @Test
  void integrityViolationIsNonRetryableByDefault() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      throw new IllegalStateException("commit failed",
          new SQLException("duplicate key value violates unique constraint", "23505"));
    });
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE);
    assertThat(ack.reason.detail()).contains("unique constraint");
  }

  @Test
  void integrityViolationIsRetriedWhenThePolicySaysSo() {
    RetryPolicy retrying = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(10))
        .retryIntegrityViolations(true).build();
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(store)
        .consumerGroup("billing").retryPolicy(retrying)
        .handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {
          throw new IllegalStateException(new SQLException("violates foreign key", "23503"));
        }).build();
    assertThat(consumer.process(message("o-1", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.RETRY);
    RecordingAcknowledgement last = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", 2), last)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(last.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
  }

  @Test
  void transactionRetryIsNotAnAttemptAndNeverDeadLettersEvenOnTheLastAttempt() {
    DelegatingStore racing = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) {
        throw new TransactionRetryException("deadlock detected (40P01)", null);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(racing)
        .consumerGroup("billing").handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {})
        .retryPolicy(threeAttempts).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", 3), ack)).isEqualTo(ProcessingOutcome.RETRY_TRANSACTION);
    assertThat(ack.calls).containsExactly("retryWhenStoreAvailable");
    assertThat(ack.retryDelay).isBetween(Duration.ZERO, Duration.ofMillis(100));
    assertThat(consumer.storeHealth().isAvailable()).as("the database answered").isTrue();
  }

  @Test
  void storeOutageIsVisibleInStoreHealthUntilATransactionReachesTheDatabase() {
    java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
    DelegatingStore flaky = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
        if (down.get()) {
          throw new StoreUnavailableException("connection refused", null);
        }
        return super.inTransaction(work);
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(flaky)
        .consumerGroup("billing").handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {})
        .retryPolicy(threeAttempts).build();
    assertThat(consumer.storeHealth().lastSuccess()).isNull();
    for (int i = 0; i < 4; i++) {
      assertThat(consumer.process(message("o-" + i, 3), new RecordingAcknowledgement()))
          .isEqualTo(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    }
    assertThat(consumer.storeHealth().consecutiveFailures()).isEqualTo(4);
    assertThat(consumer.storeHealth().outageSince()).isNotNull();
    down.set(false);
    assertThat(consumer.process(message("o-1", 1), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.storeHealth().isAvailable()).isTrue();
    assertThat(consumer.storeHealth().outageSince()).isNull();
    assertThat(consumer.storeHealth().lastSuccess()).isNotNull();
  }

  /** Issue 10 case 3: close() interrupting a handler on its last attempt neither counts nor dead-letters. */
  @Test
  void interruptedHandlerOnItsLastAttemptIsReleasedWithTheFlagRestored() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      Thread.sleep(60_000); // interrupted below before it starts sleeping
    });
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    Thread.currentThread().interrupt();
    assertThat(consumer.process(message("o-1", 3), ack)).isEqualTo(ProcessingOutcome.RELEASED);
    assertThat(Thread.currentThread().isInterrupted()).as("interrupt flag restored").isTrue();
    assertThat(ack.calls).containsExactly("release");
    assertThat(store.isProcessed(new IdempotencyKey("billing", "o-1", io.idem.KeySource.HEADER))).isFalse();
  }

  @Test
  void handlerThatSwallowedTheInterruptButFailedBecauseOfItIsReleased() {
    IdempotentConsumer<InMemoryTransaction> consumer = pipeline((m, tx) -> {
      throw new IllegalStateException("aborted", new InterruptedException("shutdown"));
    });
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(message("o-1", 3), ack)).isEqualTo(ProcessingOutcome.RELEASED);
    assertThat(ack.calls).containsExactly("release");
    assertThat(Thread.currentThread().isInterrupted()).isTrue();
  }

  /** Issue 10 case 6: one onDeadLetter per stored copy, and idem.messages also when the broker refused. */
  @Test
  void deadLetterIsReportedOncePerStoredCopyAndFailedSettlementsAreMeasured() {
    List<DeadLetterReason> deadLetters = new ArrayList<>();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(store)
        .consumerGroup("billing").retryPolicy(threeAttempts)
        .handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {
          throw new io.idem.NonRetryableException("poison");
        })
        .listener(new IdempotencyListener() {
          @Override
          public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
            deadLetters.add(reason);
          }
        })
        .listener(new MicrometerIdempotencyListener(registry, "billing"))
        .build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    ack.failDeadLetter = 2;
    for (int i = 0; i < 2; i++) {
      assertThatThrownBy(() -> consumer.process(message("o-1", 1), ack))
          .hasMessageContaining("refused the copy");
    }
    assertThat(consumer.process(message("o-1", 1), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(deadLetters).hasSize(1);
    assertThat(registry.get("idem.dead.letters").counter().count()).isEqualTo(1.0);
    assertThat(registry.get("idem.messages").tag("ack", "failed").tag("outcome", "DEAD_LETTERED")
        .timer().count()).isEqualTo(2);
    assertThat(registry.get("idem.messages").tag("ack", "ok").tag("outcome", "DEAD_LETTERED")
        .timer().count()).isEqualTo(1);
  }

  @Test
  void retriesAreCountedByCause() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    AtomicInteger mode = new AtomicInteger();
    DelegatingStore switching = new DelegatingStore(store) {
      @Override
      public <T> T inTransaction(TransactionWork<InMemoryTransaction, T> work) throws Exception {
        switch (mode.get()) {
          case 1 -> throw new StoreUnavailableException("refused", null);
          case 2 -> throw new TransactionRetryException("lock timeout", null);
          default -> {
            return super.inTransaction(work);
          }
        }
      }
    };
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(switching)
        .consumerGroup("billing").retryPolicy(threeAttempts)
        .handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {
          throw new IllegalStateException("handler bug");
        })
        .listener(new MicrometerIdempotencyListener(registry, "billing")).build();
    consumer.process(message("o-1", 1), new RecordingAcknowledgement());
    mode.set(1);
    consumer.process(message("o-1", 1), new RecordingAcknowledgement());
    consumer.process(message("o-1", 1), new RecordingAcknowledgement());
    assertThat(registry.get("idem.store.consecutive.failures").gauge().value()).isEqualTo(2.0);
    mode.set(2);
    consumer.process(message("o-1", 1), new RecordingAcknowledgement());
    assertThat(registry.get("idem.store.consecutive.failures").gauge().value()).isZero();
    mode.set(0);
    Thread.currentThread().interrupt();
    consumer.process(message("o-1", 1), new RecordingAcknowledgement());
    assertThat(count(registry, "handler")).isEqualTo(1.0);
    assertThat(count(registry, "store")).isEqualTo(2.0);
    assertThat(count(registry, "lock")).isEqualTo(1.0);
    assertThat(count(registry, "shutdown")).isEqualTo(1.0);
  }

  /** Issue 11: no broker limit acts before Idem decided — dead-letter at the lower limit. */
  @Test
  void aBrokerLimitBelowThePolicyDeadLettersWithIdemsReasonAtTheBrokersLimit() {
    RetryPolicy five = RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMillis(10)).build();
    IdempotentConsumer<InMemoryTransaction> consumer = IdempotentConsumer.builder(store)
        .consumerGroup("billing").retryPolicy(five)
        .handler((MessageHandler<InMemoryTransaction>) (m, tx) -> {
          throw new IllegalStateException("always");
        }).build();
    java.util.function.IntFunction<InboundMessage> delivery = attempt ->
        InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
            .header("idempotency-key", "o-1").deliveryAttempt(attempt).brokerAttemptLimit(3).build();
    assertThat(consumer.process(delivery.apply(2), new RecordingAcknowledgement())).isEqualTo(ProcessingOutcome.RETRY);
    RecordingAcknowledgement last = new RecordingAcknowledgement();
    assertThat(consumer.process(delivery.apply(3), last)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(last.reason.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED);
    assertThat(last.reason.detail()).contains("attempt 3 of 3").contains("broker's own limit 3");
    assertThat(last.reason.key()).isEqualTo("o-1");
  }

  private static double count(SimpleMeterRegistry registry, String cause) {
    io.micrometer.core.instrument.@Nullable Counter counter =
        registry.find("idem.retries").tag("cause", cause).counter();
    return counter == null ? 0 : counter.count();
  }
}
