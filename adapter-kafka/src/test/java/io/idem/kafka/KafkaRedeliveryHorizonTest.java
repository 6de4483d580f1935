package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class KafkaRedeliveryHorizonTest {
  @Test
  void theHorizonIsRetentionPlusSegmentPlusCheckInterval() {
    assertThat(KafkaRedeliveryHorizon.horizonOf(604_800_000L, 604_800_000L,
        KafkaRedeliveryHorizon.DEFAULT_RETENTION_CHECK_INTERVAL_MS))
        .isEqualTo(Duration.ofDays(14).plusMinutes(5));
    assertThat(KafkaRedeliveryHorizon.horizonOf(20_000, 10_000, 300_000)).isEqualTo(Duration.ofMillis(330_000));
  }

  @Test
  void negativeSettingsAreRefused() {
    assertThatThrownBy(() -> KafkaRedeliveryHorizon.horizonOf(-1, 0, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must not be negative");
  }
}
