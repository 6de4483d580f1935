package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@link ProcessedEventStoreCompatibilityKit} rejects plausible wrong stores ({@link FaultyStores}):
 * each is run through the JUnit Platform, and the tests that name its fault must fail; the same
 * store without a fault passes the whole kit.
 */
class StoreKitRejectsWrongStoresTest {

  @Test
  @DisplayName("control: the faultless store passes every test of the kit")
  void faultlessStorePasses() {
    KitRun run = KitRun.of(FaultyStores.Correct.class);
    assertThat(run.failed()).isEmpty();
    assertThat(run.skipped()).isEmpty();
    assertThat(run.succeeded()).contains("racingClaimWaitsThenIsDuplicate", "longestKeyIsStoredWhole",
        "swallowedFailureNeverCommitsTheClaimAlone", "unreachableDatabaseIsStoreUnavailable",
        "recordedDecisionIsReadBack", "releaseRemovesOnlyThatDelivery",
            "deadLetterStartsAfresh");
  }

  @Test
  @DisplayName("a store that decides duplicates by catching the unique violation is rejected")
  void catchingTheUniqueViolationIsRejected() {
    assertThat(KitRun.of(FaultyStores.CatchesUniqueViolation.class).failed())
        .contains("duplicateLeavesTransactionUsable", "racingClaimWaitsThenIsDuplicate");
  }

  @Test
  @DisplayName("a store that truncates keys is rejected")
  void truncatingKeysIsRejected() {
    assertThat(KitRun.of(FaultyStores.TruncatesKeys.class).failed())
        .contains("longestKeyIsStoredWhole", "longestMultiByteKeyIsStoredWhole");
  }

  @Test
  @DisplayName("a store that answers 'duplicate' without waiting for the open transaction is rejected")
  void skippingTheLockWaitIsRejected() {
    assertThat(KitRun.of(FaultyStores.SkipsLockWait.class).failed())
        .contains("racingClaimWaitsThenIsDuplicate", "racingClaimWaitsThenIsConflict",
            "racingClaimWinsAfterRollback", "racingKeyClaimedAfterRollback");
  }

  @Test
  @DisplayName("a store that claims a held key at once is rejected, even by the rollback race")
  void claimingWithoutWaitingIsRejected() {
    assertThat(KitRun.of(FaultyStores.ClaimsWithoutWaiting.class).failed())
        .contains("racingClaimWinsAfterRollback", "racingClaimWaitsThenIsDuplicate", "racingKeyClaimedAfterRollback");
  }

  @Test
  @DisplayName("a store that does not report an unreachable database as StoreUnavailableException is rejected")
  void unclassifiedOutageIsRejected() {
    assertThat(KitRun.of(FaultyStores.OutageUnclassified.class).failed())
        .containsExactlyInAnyOrder("unreachableDatabaseIsStoreUnavailable", "unreachableDatabaseFailsDecisions",
            "unreachableDatabaseFailsAttempts");
  }

  @Test
  @DisplayName("a store that reports the work's own SQL failure as an outage is rejected")
  void workFailureAsOutageIsRejected() {
    assertThat(KitRun.of(FaultyStores.WorkFailureAsOutage.class).failed())
        .containsExactly("rejectedStatementIsTheWorksFailure");
  }

  @Test
  @DisplayName("a store that reports a commit of an aborted transaction as success is rejected")
  void silentRollbackIsRejected() {
    assertThat(KitRun.of(FaultyStores.CommitsAbortedSilently.class).failed())
        .containsExactly("swallowedFailureNeverCommitsTheClaimAlone");
  }

  @Test
  @DisplayName("a store that reports a dead-letter decision recorded but keeps none is rejected")
  void forgettingDeadLetterDecisionsIsRejected() {
    assertThat(KitRun.of(FaultyStores.ForgetsDeadLetters.class).failed())
        .containsExactlyInAnyOrder("recordedDecisionIsReadBack", "releaseRemovesOnlyThatDelivery",
            "deadLetterStartsAfresh");
  }

  @Test
  @DisplayName("a store whose attempt counts do not last (every start answers 1) is rejected")
  void forgettingAttemptsIsRejected() {
    assertThat(KitRun.of(FaultyStores.ForgetsAttempts.class).failed())
        .containsExactlyInAnyOrder("attemptsCountUp", "clearedOnlyByACommit", "deadLetterStartsAfresh",
            "purgeRemovesOldCounts");
  }

  @Test
  @DisplayName("a store that clears an attempt count outside the message's transaction is rejected")
  void clearingAttemptsOnRollbackIsRejected() {
    assertThat(KitRun.of(FaultyStores.ClearsAttemptsOnRollback.class).failed())
        .containsExactly("clearedOnlyByACommit");
  }

  @Test
  @DisplayName("a store that keeps the attempt count of a dead-lettered key is rejected")
  void keepingAttemptsOfDeadLettersIsRejected() {
    assertThat(KitRun.of(FaultyStores.KeepsAttemptsOfDeadLetters.class).failed())
        .containsExactly("deadLetterStartsAfresh");
  }

  @Test
  @DisplayName("a store that turns a processed key's marker into a dead letter is rejected")
  void overwritingAProcessedMarkerIsRejected() {
    assertThat(KitRun.of(FaultyStores.OverwritesProcessed.class).failed())
        .containsExactly("processedMarkerIsKept");
  }
}
