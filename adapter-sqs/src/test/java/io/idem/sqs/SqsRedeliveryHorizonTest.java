package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The arithmetic of {@link SqsRedeliveryHorizon#horizonOf} (Amazon SQS's DLQ retention rules). */
class SqsRedeliveryHorizonTest {
  private static final Duration FOUR_DAYS = Duration.ofDays(4);
  private static final Duration FOURTEEN_DAYS = Duration.ofDays(14);

  @Test
  void withoutADeadLetterQueueTheHorizonIsTheRetentionPeriod() {
    assertThat(SqsRedeliveryHorizon.horizonOf(FOUR_DAYS, null, false)).isEqualTo(FOUR_DAYS);
    assertThat(SqsRedeliveryHorizon.horizonOf(FOUR_DAYS, null, true)).isEqualTo(FOUR_DAYS);
  }

  /** A standard DLQ keeps the original enqueue time: the DLQ's retention counts from the first send, then a redrive. */
  @Test
  void aStandardQueuesDlqCountsFromTheFirstSendThenOneRedrive() {
    assertThat(SqsRedeliveryHorizon.horizonOf(FOUR_DAYS, FOURTEEN_DAYS, false)).isEqualTo(Duration.ofDays(18));
    // a DLQ shorter than the source: the redrive can still come up to the DLQ's retention
    assertThat(SqsRedeliveryHorizon.horizonOf(FOURTEEN_DAYS, FOUR_DAYS, false)).isEqualTo(Duration.ofDays(18));
  }

  /** A FIFO DLQ resets the enqueue time: source + DLQ, then a redrive. */
  @Test
  void aFifoQueuesDlqRestartsTheClockThenOneRedrive() {
    assertThat(SqsRedeliveryHorizon.horizonOf(FOUR_DAYS, FOURTEEN_DAYS, true)).isEqualTo(Duration.ofDays(22));
  }
}
