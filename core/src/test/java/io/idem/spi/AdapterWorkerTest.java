package io.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyException;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.helpers.NOPLogger;

class AdapterWorkerTest {
  private static final Logger QUIET = NOPLogger.NOP_LOGGER;
  private static final Duration BACKOFF = Duration.ofMillis(250);

  private final List<Duration> handedBack = new ArrayList<>();
  private final AtomicBoolean fatal = new AtomicBoolean();

  private <T> T run(java.util.concurrent.Callable<T> processing, SettlementRecord record) {
    return AdapterWorker.survive(() -> "message m1 of q", processing, () -> record,
        (failure, after) -> handedBack.add(after), BACKOFF, () -> fatal.set(true), QUIET);
  }

  @Test
  void returnsWhatProcessingReturnedAndHandsNothingBack() {
    assertThat(run(() -> ProcessingOutcome.PROCESSED, new SettlementRecord()))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(handedBack).isEmpty();
  }

  @Test
  void unsettledDeliveryIsHandedBackAfterTheBackoffAndTheWorkerGoesOn() {
    Object result = run(() -> {
      throw new AssertionError("listener error");
    }, new SettlementRecord());
    assertThat(result).isNull();
    assertThat(handedBack).containsExactly(BACKOFF);
    assertThat(fatal).isFalse();
  }

  @Test
  void aHandBackThatReportsItselfIsStillCalledAfterTheBackoff() {
    List<Throwable> reported = new ArrayList<>();
    AdapterWorker.HandBack reporting = new AdapterWorker.HandBack() {
      @Override
      public void handBack(Throwable failure, Duration after) {
        reported.add(failure);
        handedBack.add(after);
      }

      @Override
      public boolean reportsItself(Throwable failure) {
        return true;
      }
    };
    AssertionError thrown = new AssertionError("listener error");
    Object result = AdapterWorker.survive(() -> "m", () -> {
      throw thrown;
    }, () -> new SettlementRecord(), reporting, BACKOFF, () -> fatal.set(true), QUIET);
    assertThat(result).isNull();
    assertThat(reported).containsExactly(thrown);
    assertThat(handedBack).containsExactly(BACKOFF);
    assertThat(new AdapterWorker.HandBack() {
      @Override
      public void handBack(Throwable failure, Duration after) {}
    }.reportsItself(thrown)).as("default: survive logs it").isFalse();
  }

  @Test
  void settledDeliveryIsLeftAlone() {
    SettlementRecord record = new SettlementRecord();
    Object result = run(() -> {
      record.markSettled();
      throw new IdempotencyException("listener threw after the ack");
    }, record);
    assertThat(result).isNull();
    assertThat(handedBack).isEmpty();
  }

  @Test
  void throwBeforeTheAcknowledgementExistedHandsBack() {
    Object result = AdapterWorker.survive(() -> "m", () -> {
      throw new IllegalStateException("unreadable");
    }, () -> null, (failure, after) -> handedBack.add(after), BACKOFF, () -> fatal.set(true), QUIET);
    assertThat(result).isNull();
    assertThat(handedBack).containsExactly(BACKOFF);
  }

  @Test
  void virtualMachineErrorHandsBackAtOnceMarksFatalAndIsRethrown() {
    OutOfMemoryError oom = new OutOfMemoryError("injected");
    assertThatThrownBy(() -> run(() -> {
      throw oom;
    }, new SettlementRecord())).isSameAs(oom);
    assertThat(fatal).isTrue();
    assertThat(handedBack).containsExactly(Duration.ZERO);
  }

  @Test
  void failingHandBackAfterAVirtualMachineErrorIsSuppressed() {
    OutOfMemoryError oom = new OutOfMemoryError("injected");
    assertThatThrownBy(() -> AdapterWorker.survive(() -> "m", () -> {
      throw oom;
    }, () -> null, (failure, after) -> {
      throw new IllegalStateException("channel gone");
    }, BACKOFF, () -> fatal.set(true), QUIET)).isSameAs(oom);
    assertThat(oom.getSuppressed()).hasSize(1);
  }

  @Test
  void stopsAfterAReleaseWhileStoppingOnlyAndClearsAStrayInterrupt() {
    assertThat(AdapterWorker.stopsAfter(true, ProcessingOutcome.RELEASED, () -> "m", QUIET)).isTrue();
    assertThat(AdapterWorker.stopsAfter(true, ProcessingOutcome.PROCESSED, () -> "m", QUIET)).isFalse();
    Thread.currentThread().interrupt();
    assertThat(AdapterWorker.stopsAfter(false, ProcessingOutcome.PROCESSED, () -> "m", QUIET)).isFalse();
    assertThat(Thread.currentThread().isInterrupted()).isFalse();
    Thread.currentThread().interrupt();
    assertThat(AdapterWorker.stopsAfter(true, ProcessingOutcome.PROCESSED, () -> "m", QUIET)).isTrue();
    assertThat(Thread.interrupted()).isTrue(); // the flag stays set for the worker's exit
  }

  @Test
  void awaitAllThenInterruptReachesAWorkerThatWaitsForTheInterrupt() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    AtomicBoolean released = new AtomicBoolean();
    Thread busy = new Thread(() -> {
      started.countDown();
      try {
        new CountDownLatch(1).await(); // a handler that only ends on an interrupt
      } catch (InterruptedException e) {
        released.set(true);
      }
    });
    busy.start();
    assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(AdapterWorker.awaitAll(List.of(busy), System.nanoTime() + 50_000_000L)).containsExactly(busy);
    assertThat(AdapterWorker.interruptAndAwait(List.of(busy), AdapterWorker.AFTER_INTERRUPT)).isEmpty();
    assertThat(released).isTrue();
  }

  @Test
  void settlementRecordSettlesOnceAndCarriesTheHold() {
    SettlementRecord record = new SettlementRecord();
    assertThat(record.heldForStore()).isNull();
    record.markHeldForStore(Duration.ofSeconds(2));
    assertThat(record.heldForStore()).isEqualTo(Duration.ofSeconds(2));
    record.markSettled();
    assertThatThrownBy(record::markSettled).isInstanceOf(IllegalStateException.class);
  }
}
