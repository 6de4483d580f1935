package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code --replay-dead-letters[=N]}: off by default, 5 orders without a value, checked against the events. */
class ReplayDeadLettersOptionTest {

  private static DemoMain parsed(String... args) {
    DemoMain demo = new DemoMain(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    DemoMain.commandLine(demo).parseArgs(args);
    demo.validate();
    return demo;
  }

  @Test
  void offByDefaultFiveWithoutAValueAndNamedWhenOutOfRange() {
    assertThat(parsed().replayDeadLetters).isZero();
    assertThat(parsed("--replay-dead-letters").replayDeadLetters).isEqualTo(5);
    assertThat(parsed("--replay-dead-letters=12").replayDeadLetters).isEqualTo(12);
    assertThatThrownBy(() -> parsed("--events", "10", "--replay-dead-letters=6"))
        .hasMessage("--replay-dead-letters must be in [0, --events / 2], but was 6");
    assertThatThrownBy(() -> parsed("--replay-dead-letters", "--migrate-from", "kafka", "--migrate-to", "sqs"))
        .hasMessageContaining("does not go with --migrate-from");
  }
}
