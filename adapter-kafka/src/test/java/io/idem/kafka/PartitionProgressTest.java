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
}
