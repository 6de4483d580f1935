package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class PartitionProgressTest {
  private static final TopicPartition P0 = new TopicPartition("t", 0);
  private static final TopicPartition P1 = new TopicPartition("t", 1);

  private final PartitionProgress progress = new PartitionProgress();

  @Test
  void caughtUpCommitsTheNextFetchOffsetPastATransactionMarker() {
    progress.settled(P0, 5, Optional.of(7));
    progress.caughtUp(P0, new OffsetAndMetadata(7, Optional.of(7), "")); // offset 6: commit marker

    assertThat(progress.toCommit(List.of(P0)).get(P0).offset()).isEqualTo(7);
  }

  @Test
  void caughtUpNeverMovesBackwards() {
    progress.settled(P0, 9, Optional.empty());
    progress.caughtUp(P0, new OffsetAndMetadata(4));

    assertThat(progress.toCommit(List.of(P0)).get(P0).offset()).isEqualTo(10);
  }

  @Test
  void caughtUpOnAPartitionWithNothingSettledCommitsBeyondItsCommittedOffset() {
    progress.knownCommitted(P0, 6); // a consumer that committed offset + 1, before the marker
    progress.caughtUp(P0, new OffsetAndMetadata(7));
    assertThat(progress.toCommit(List.of(P0)).get(P0).offset()).isEqualTo(7);

    progress.committed(Map.of(P0, new OffsetAndMetadata(7)));
    progress.caughtUp(P0, new OffsetAndMetadata(7));
    assertThat(progress.toCommit(List.of(P0))).isEmpty();
  }

  @Test
  void pausedCountIsOnePerPausedPartition() {
    progress.pauseUntil(P0, 10);
    progress.pauseUntil(P1, 20);
    assertThat(progress.pausedCount()).isEqualTo(2);
    progress.dueForResume(15);
    assertThat(progress.pausedCount()).isEqualTo(1);
  }

  @Test
  void commitsOnePastTheLastSettledRecord() {
    progress.settled(P0, 4, Optional.of(7));
    progress.settled(P0, 5, Optional.of(7));

    Map<TopicPartition, OffsetAndMetadata> offsets = progress.toCommit(List.of(P0, P1));

    assertThat(offsets).containsOnlyKeys(P0);
    assertThat(offsets.get(P0).offset()).isEqualTo(6);
    assertThat(offsets.get(P0).leaderEpoch()).contains(7);
  }

  @Test
  void neverCommitsBelowOrAtWhatIsCommitted() {
    progress.knownCommitted(P0, 10);
    progress.settled(P0, 3, Optional.empty());
    assertThat(progress.toCommit(List.of(P0))).isEmpty();

    progress.settled(P0, 10, Optional.empty());
    assertThat(progress.toCommit(List.of(P0)).get(P0).offset()).isEqualTo(11);
    progress.committed(progress.toCommit(List.of(P0)));
    assertThat(progress.toCommit(List.of(P0))).isEmpty();
    assertThat(progress.committedOffset(P0)).hasValue(11);

    progress.settled(P0, 5, Optional.empty()); // a late, lower settlement does not move it back
    assertThat(progress.toCommit(List.of(P0))).isEmpty();
    progress.committed(Map.of(P0, new OffsetAndMetadata(4)));
    assertThat(progress.committedOffset(P0)).hasValue(11);
  }

  @Test
  void onlyOwnedPartitionsAreCommitted() {
    progress.settled(P0, 1, Optional.empty());
    progress.settled(P1, 1, Optional.empty());
    assertThat(progress.toCommit(List.of(P1))).containsOnlyKeys(P1);
  }

  @Test
  void attemptsCountPerOffsetAndResetWhenSettledOrForgotten() {
    assertThat(progress.attemptFor(P0, 8)).isEqualTo(1);
    progress.failed(P0, 8, 1);
    assertThat(progress.attemptFor(P0, 8)).isEqualTo(2);
    progress.failed(P0, 8, 2);
    assertThat(progress.attemptFor(P0, 8)).isEqualTo(3);
    assertThat(progress.attemptFor(P0, 9)).isEqualTo(1);
    assertThat(progress.attemptFor(P1, 8)).isEqualTo(1);

    progress.settled(P0, 8, Optional.empty());
    assertThat(progress.attemptFor(P0, 8)).isEqualTo(1);

    progress.failed(P1, 2, 4);
    progress.forget(List.of(P1));
    assertThat(progress.attemptFor(P1, 2)).isEqualTo(1);
  }

  @Test
  void pausedPartitionsResumeWhenDue() {
    progress.pauseUntil(P0, 1_000);
    progress.pauseUntil(P1, 3_000);

    assertThat(progress.nanosUntilNextResume(0)).hasValue(1_000);
    assertThat(progress.dueForResume(999)).isEmpty();
    assertThat(progress.dueForResume(1_000)).containsExactly(P0);
    assertThat(progress.isPaused(P0)).isFalse();
    assertThat(progress.nanosUntilNextResume(2_000)).hasValue(1_000);
    progress.forget(List.of(P1));
    assertThat(progress.nanosUntilNextResume(2_000)).isEmpty();
  }

  @Test
  void anyToCommitIsWhatToCommitWouldReturn() {
    assertThat(progress.anyToCommit(List.of(P0, P1))).isFalse();
    progress.settled(P0, 3, Optional.empty());
    assertThat(progress.anyToCommit(List.of(P1))).isFalse(); // not an owned partition's
    assertThat(progress.anyToCommit(List.of(P0, P1))).isTrue();
    progress.committed(progress.toCommit(List.of(P0, P1)));
    assertThat(progress.anyToCommit(List.of(P0, P1))).isFalse();
  }

  @Test
  void noWindowFlagsNothing() {
    assertThat(progress.inWindow(P0)).isFalse();
    assertThat(progress.flag(P0, 0)).isFalse();
  }

  @Test
  void perMessageWindowFlagsThroughDuplicatesAndDeadLettersUntilTheFirstRecordAppliedFresh() {
    progress.openWindow(P0, 1);
    assertThat(progress.flag(P0, 10)).as("settled by the dead owner: a duplicate").isTrue();
    assertThat(progress.flag(P0, 11)).as("dead-lettered again from its decision").isTrue();
    assertThat(progress.flag(P0, 12)).as("the one the dead owner was in").isTrue();
    progress.appliedFresh(P0, 12);

    assertThat(progress.inWindow(P0)).isFalse();
    assertThat(progress.flag(P0, 13)).as("never started by the dead owner").isFalse();
  }

  @Test
  void aRetryInThisLifeIsNotFlaggedAgainAndDoesNotCloseTheWindow() {
    progress.openWindow(P0, 1);
    assertThat(progress.flag(P0, 3)).isTrue();
    // it failed (handler, outage, release): sought back and run again, counted in memory
    assertThat(progress.flag(P0, 3)).isFalse();
    assertThat(progress.inWindow(P0)).isTrue();
    progress.appliedFresh(P0, 3);
    assertThat(progress.flag(P0, 4)).isFalse();
  }

  @Test
  void batchWindowFlagsTheRestOfABatchTheDeadOwnerMayHaveStartedBeforeTheFirstRecordAppliedFresh() {
    progress.openWindow(P0, 3);
    assertThat(progress.flag(P0, 0)).isTrue();
    progress.appliedFresh(P0, 0); // the first of a batch of 3 the dead owner had in its handler
    assertThat(progress.flag(P0, 1)).isTrue();
    assertThat(progress.flag(P0, 1)).as("its retry").isFalse();
    assertThat(progress.flag(P0, 2)).isTrue();
    assertThat(progress.inWindow(P0)).isTrue();
    assertThat(progress.flag(P0, 3)).as("past any batch that began at or before offset 0").isFalse();
    assertThat(progress.inWindow(P0)).isFalse();
  }

  @Test
  void anAssignmentOpensTheWindowAfreshAndARevocationForgetsIt() {
    progress.openWindow(P0, 1);
    progress.openWindow(P1, 1);
    progress.flag(P0, 0);
    progress.appliedFresh(P0, 0);
    progress.forget(List.of(P1));

    assertThat(progress.inWindow(P0)).isFalse();
    assertThat(progress.inWindow(P1)).isFalse();
    progress.openWindow(P0, 1);
    assertThat(progress.flag(P0, 0)).as("fetched again from the committed offset").isTrue();
  }

  @Test
  void aCleanMarkHoldsUntilSomethingIsSettledOrCommitted() {
    progress.knownCommitted(P0, 4);
    progress.markedClean(List.of(P0));
    assertThat(progress.committedClean(P0)).isTrue();

    progress.settled(P0, 4, Optional.empty());
    assertThat(progress.committedClean(P0)).isFalse();
    progress.committed(Map.of(P0, new OffsetAndMetadata(5)));
    assertThat(progress.committedClean(P0)).isFalse();
  }
}
