package io.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SettingsTest {
  @Test
  void namesTheSettingAndTheValue() {
    assertThatThrownBy(() -> Settings.positive("pollTimeout", Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("pollTimeout must be positive, but was PT0S");
    assertThatThrownBy(() -> Settings.notNegative("shutdownTimeout", Duration.ofSeconds(-1)))
        .hasMessage("shutdownTimeout must not be negative, but was PT-1S");
    assertThatThrownBy(() -> Settings.atLeast("concurrency", 0, 1))
        .hasMessage("concurrency must be >= 1, but was 0");
    assertThatThrownBy(() -> Settings.inRange("prefetch", 65_536, 1, 65_535))
        .hasMessage("prefetch must be in 1..65535, but was 65536");
    assertThatThrownBy(() -> Settings.notBlank("queue", " "))
        .hasMessage("queue must not be blank, but was ' '");
    assertThatThrownBy(() -> Settings.positive("interval", null)).hasMessage("interval");
  }

  @Test
  void returnsAcceptedValues() {
    assertThat(Settings.positive("t", Duration.ofMillis(1))).isEqualTo(Duration.ofMillis(1));
    assertThat(Settings.notNegative("t", Duration.ZERO)).isEqualTo(Duration.ZERO);
    assertThat(Settings.atLeast("n", 1, 1)).isEqualTo(1);
    assertThat(Settings.inRange("n", 65_535, 1, 65_535)).isEqualTo(65_535);
    assertThat(Settings.notBlank("q", "orders")).isEqualTo("orders");
  }
}
