package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadLetterCheckTest {

  private static DeadLetter deadLetter(Outbound original, String cause) {
    return new DeadLetter(Map.of("idem-dead-letter-cause", cause), original.payload());
  }

  @Test
  void exactlyTheKeylessMessagesIsRight() {
    List<DeadLetter> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"),
        deadLetter(DeadLetterCheck.keyless("b"), "NO_KEY"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a", "b"))).isZero();
  }

  @Test
  void aSecondCopyOfAKeylessMessageIsNotWrong() {
    List<DeadLetter> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"),
        deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"))).isZero();
  }

  @Test
  void aMissingKeylessMessageAndAnyOtherDeadLetterAreWrong() {
    DeadLetter order = new DeadLetter(Map.of("idem-dead-letter-cause", "MAX_ATTEMPTS_EXCEEDED"),
        "{\"orderId\":\"o-1\"}".getBytes(StandardCharsets.UTF_8));
    List<DeadLetter> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"), order);

    assertThat(DeadLetterCheck.wrong(found, List.of("a", "b"))).isEqualTo(2);
    assertThat(DeadLetterCheck.describe(found, List.of("a", "b"))).contains("o-1", "[b]");
  }

  @Test
  void aKeylessMessageDeadLetteredForAnotherCauseIsWrong() {
    List<DeadLetter> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NON_RETRYABLE"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"))).isEqualTo(2);
  }
}
