package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@link BrokerAdapterCompatibilityKit} rejects plausible wrong adapters ({@link FakeBroker}) on the
 * real PostgreSQL: each is run through the JUnit Platform, and the tests that name its fault must
 * fail; the same adapter without a fault passes the whole kit.
 */
class AdapterKitRejectsWrongAdaptersTest {

  @Test
  @DisplayName("control: the faultless adapter passes every test of the kit")
  void faultlessAdapterPasses() {
    KitRun run = KitRun.of(FakeAdapters.Correct.class);
    assertThat(run.failed()).isEmpty();
    assertThat(run.skipped()).isEmpty();
    assertThat(run.succeeded()).contains("failedCommitIsNotAcked", "storeOutageIsNotAnAttempt",
        "retryDelayIsHonoured", "closeWithWorkInFlight", "twoConsumersApplyEachKeyOnce");
  }

  @Test
  @DisplayName("an adapter that acks before the commit is rejected")
  void ackingBeforeCommitIsRejected() {
    assertThat(KitRun.of(FakeAdapters.AcksBeforeCommit.class).failed())
        .contains("failedCommitIsNotAcked", "handlerFailureRollsBackAndIsRedelivered");
  }

  @Test
  @DisplayName("an adapter that counts a store outage as an attempt is rejected")
  void countingTheOutageIsRejected() {
    assertThat(KitRun.of(FakeAdapters.CountsStoreOutageAsAttempt.class).failed())
        .containsExactly("storeOutageIsNotAnAttempt");
  }

  @Test
  @DisplayName("an adapter that redelivers a retry before its backoff is rejected")
  void ignoringTheRetryDelayIsRejected() {
    assertThat(KitRun.of(FakeAdapters.IgnoresRetryDelay.class).failed())
        .containsExactly("retryDelayIsHonoured");
  }

  @Test
  @DisplayName("an adapter whose close() does not wait for the work in flight is rejected")
  void closeNotWaitingIsRejected() {
    assertThat(KitRun.of(FakeAdapters.CloseAbandonsInFlight.class).failed())
        .contains("closeWithWorkInFlight");
  }
}
