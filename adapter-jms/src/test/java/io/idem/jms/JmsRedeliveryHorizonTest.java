package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.spi.RedeliveryHorizon.Horizon;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class JmsRedeliveryHorizonTest {

  @Test
  void theDeclaredHorizonIsTheTimeToLivePlusTheRedeliveries() {
    Horizon horizon = JmsRedeliveryHorizon.declared("orders", Duration.ofDays(1), Duration.ofMinutes(30)).read();
    assertThat(horizon.source()).isEqualTo("jms queue orders");
    assertThat(horizon.bound()).isEqualTo(Duration.ofMinutes(24 * 60 + 30));
    assertThat(horizon.basis()).isEqualTo("declared: time-to-live PT24H + redeliveries PT30M");
  }

  @Test
  void aNegativeDurationIsRefusedNamingTheSetting() {
    assertThatThrownBy(() -> JmsRedeliveryHorizon.declared("orders", Duration.ZERO, Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("redeliveries must not be negative, but was PT-1S");
  }
}
