package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link BatchBudget}'s arithmetic, fed times (nothing sleeps). */
class BatchBudgetTest {
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  @Test
  void theFirstRunIsASingleRecordWhateverTheTimeLeft() {
    BatchBudget budget = new BatchBudget(100);
    assertThat(budget.nanosPerRecord()).isZero();
    assertThat(budget.size(150_000 * MS)).isEqualTo(1);
  }

  @Test
  void aBatchTakesHalfTheTimeLeftAtTheMeasuredTimePerRecord() {
    BatchBudget budget = new BatchBudget(100);
    budget.completed(1, 100 * MS);
    // floor(3000 / (2 × 100)) = 15
    assertThat(budget.size(3000 * MS)).isEqualTo(15);
    assertThat(budget.size(2999 * MS)).isEqualTo(14);
    assertThat(budget.size(400 * MS)).isEqualTo(2);
  }

  @Test
  void aBatchIsSizedToFinishWithinTheShutdownTimeoutWhenThePollBudgetLeavesMore() {
    BatchBudget budget = new BatchBudget(100, 30_000 * MS); // shutdownTimeout 30 s
    budget.completed(1, 500 * MS); // a slow handler: 0.5 s per record
    // 150 s left in the poll budget would give 100 (the most); the 30 s shutdown timeout gives floor(30000 / 1000) = 30
    assertThat(budget.size(150_000 * MS)).isEqualTo(30);
    assertThat(budget.size(10_000 * MS)).isEqualTo(10); // less time left than the shutdown timeout: the deadline decides
    assertThatThrownBy(() -> new BatchBudget(10, 0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("longestNanos");
  }

  @Test
  void theSizeIsClampedBetweenOneAndMaxBatchSize() {
    BatchBudget budget = new BatchBudget(100);
    budget.completed(10, 10 * MS); // 1 ms per record
    assertThat(budget.size(150_000 * MS)).isEqualTo(100);
    assertThat(budget.size(1 * MS)).isEqualTo(1); // less than one record's time left: one record
    assertThat(budget.size(0)).isEqualTo(1);
    assertThat(budget.size(-5 * MS)).isEqualTo(1);
    assertThat(budget.size(Long.MAX_VALUE)).isEqualTo(100);
  }

  @Test
  void aSlowerRunRaisesTheEstimateAtOnce() {
    BatchBudget budget = new BatchBudget(100);
    budget.completed(10, 10 * MS); // 1 ms per record
    budget.completed(4, 400 * MS); // 100 ms per record
    assertThat(budget.nanosPerRecord()).isEqualTo(100.0 * MS);
    assertThat(budget.size(3000 * MS)).isEqualTo(15);
  }

  @Test
  void aFasterRunLowersTheEstimateAQuarterOfTheWay() {
    BatchBudget budget = new BatchBudget(100);
    budget.completed(1, 100 * MS);
    budget.completed(20, 20 * MS); // 1 ms per record: 100 + 0.25 × (1 - 100) = 75.25 ms
    assertThat(budget.nanosPerRecord()).isEqualTo(75.25 * MS);
    budget.completed(20, 20 * MS); // 75.25 + 0.25 × (1 - 75.25) = 56.6875 ms
    assertThat(budget.nanosPerRecord()).isEqualTo(56.6875 * MS);
    // floor(3000 / (2 × 56.6875)) = 26
    assertThat(budget.size(3000 * MS)).isEqualTo(26);
  }

  @Test
  void aRunMeasuredAtZeroNanosStillCountsAsMeasured() {
    BatchBudget budget = new BatchBudget(100);
    budget.completed(5, 0);
    assertThat(budget.nanosPerRecord()).isPositive();
    assertThat(budget.size(MS)).isEqualTo(100);
  }

  @Test
  void perMessageModeIsAlwaysOne() {
    BatchBudget budget = new BatchBudget(1);
    budget.completed(1, 1);
    assertThat(budget.size(150_000 * MS)).isEqualTo(1);
  }

  @Test
  void refusesAnEmptyRunAndABatchSizeBelowOne() {
    assertThatThrownBy(() -> new BatchBudget(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatchSize must be >= 1, but was 0");
    assertThatThrownBy(() -> new BatchBudget(10).completed(0, MS)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("records must be >= 1, but was 0");
  }
}
