package io.idem.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.http.internal.KeyHeader;
import java.util.List;
import org.junit.jupiter.api.Test;

class KeyHeaderTest {
  @Test
  void aStructuredFieldStringAndABareTokenBothGiveTheKey() {
    assertThat(KeyHeader.parse(List.of("\"8e03978e-40d5-43e8-bc93-6894a57f9324\""), 255).key())
        .isEqualTo("8e03978e-40d5-43e8-bc93-6894a57f9324");
    assertThat(KeyHeader.parse(List.of("8e03978e-40d5"), 255).key()).isEqualTo("8e03978e-40d5");
    assertThat(KeyHeader.parse(List.of("\"a \\\"quoted\\\" key\""), 255).key()).isEqualTo("a \"quoted\" key");
  }

  @Test
  void absentIsNoKeyAndNoProblem() {
    KeyHeader.Parsed parsed = KeyHeader.parse(List.of(), 255);
    assertThat(parsed.key()).isNull();
    assertThat(parsed.problem()).isNull();
  }

  @Test
  void malformedRepeatedEmptyOrTooLongKeysAreProblems() {
    assertThat(KeyHeader.parse(List.of("\"open"), 255).problem()).contains("RFC 8941");
    assertThat(KeyHeader.parse(List.of("\"a\";param=1"), 255).problem()).contains("RFC 8941");
    assertThat(KeyHeader.parse(List.of("\"bad\\escape\""), 255).problem()).contains("RFC 8941");
    assertThat(KeyHeader.parse(List.of("two words"), 255).problem()).contains("not visible ASCII");
    assertThat(KeyHeader.parse(List.of("a", "b"), 255).problem()).contains("2 times");
    assertThat(KeyHeader.parse(List.of("\"\""), 255).problem()).contains("empty");
    assertThat(KeyHeader.parse(List.of("k".repeat(256)), 255).problem()).contains("256 characters").contains("maxKeyLength");
  }
}
