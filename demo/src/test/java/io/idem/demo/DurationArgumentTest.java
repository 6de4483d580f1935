package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DurationArgumentTest {

  @Test
  void shortFormsAddUp() {
    assertThat(DurationArgument.parse("90s")).isEqualTo(Duration.ofSeconds(90));
    assertThat(DurationArgument.parse("10m")).isEqualTo(Duration.ofMinutes(10));
    assertThat(DurationArgument.parse("1h")).isEqualTo(Duration.ofHours(1));
    assertThat(DurationArgument.parse("1h30m")).isEqualTo(Duration.ofMinutes(90));
    assertThat(DurationArgument.parse("500ms")).isEqualTo(Duration.ofMillis(500));
    assertThat(DurationArgument.parse("2D")).isEqualTo(Duration.ofDays(2));
  }

  @Test
  void iso8601InAnyCase() {
    assertThat(DurationArgument.parse("PT10M")).isEqualTo(Duration.ofMinutes(10));
    assertThat(DurationArgument.parse("pt1h30m")).isEqualTo(Duration.ofMinutes(90));
  }

  @Test
  void anythingElseIsRefusedWithExamples() {
    for (String wrong : new String[] {"", "10", "m10", "10 minutes", "PT", "1h 30m"}) {
      assertThatThrownBy(() -> DurationArgument.parse(wrong)).as(wrong)
          .isInstanceOf(CommandLine.TypeConversionException.class)
          .hasMessageContaining("90s, 10m, 1h")
          .hasMessageContaining("PT10M");
    }
  }

  @Test
  void formatWritesTheShortFormParseReadsBack() {
    for (String text : java.util.List.of("1s", "10m", "1h30m", "500ms", "2d3h", "1m30s")) {
      assertThat(DurationArgument.format(DurationArgument.parse(text))).isEqualTo(text);
    }
    assertThat(DurationArgument.format(java.time.Duration.ofSeconds(90))).isEqualTo("1m30s");
  }
}
