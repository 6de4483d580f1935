package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.spi.RedeliveryHorizon.Horizon;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RabbitRedeliveryHorizonTest {

  @Test
  void theDeclaredHorizonIsTheTtlPlusTheRetries() {
    Horizon horizon = RabbitRedeliveryHorizon.declared("orders", Duration.ofDays(2), Duration.ofHours(6)).read();
    assertThat(horizon.source()).isEqualTo("rabbitmq queue orders");
    assertThat(horizon.bound()).isEqualTo(Duration.ofHours(54));
    assertThat(horizon.basis()).isEqualTo("declared: message TTL PT48H + retries PT6H");
  }

  @Test
  void aNegativeDurationIsRefusedNamingTheSetting() {
    assertThatThrownBy(() -> RabbitRedeliveryHorizon.declared("orders", Duration.ofDays(-1), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("messageTtl must not be negative, but was PT-24H");
  }
}
