package io.idem.demo;

import io.idem.testkit.DeadLetteredMessage;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadLetterCheckTest {

  private static DeadLetteredMessage deadLetter(Outbound original, String cause) {
    return new DeadLetteredMessage(Map.of("idem-dead-letter-cause", cause), original.payload());
  }

  @Test
  void exactlyTheKeylessMessagesIsRight() {
    List<DeadLetteredMessage> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"),
        deadLetter(DeadLetterCheck.keyless("b"), "NO_KEY"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a", "b"))).isZero();
  }

  @Test
  void aSecondCopyOfAKeylessMessageIsNotWrong() {
    List<DeadLetteredMessage> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"),
        deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"))).isZero();
  }

  @Test
  void aMissingKeylessMessageAndAnyOtherDeadLetterAreWrong() {
    DeadLetteredMessage order = new DeadLetteredMessage(Map.of("idem-dead-letter-cause", "MAX_ATTEMPTS_EXCEEDED"),
        "{\"orderId\":\"o-1\"}".getBytes(StandardCharsets.UTF_8));
    List<DeadLetteredMessage> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NO_KEY"), order);

    assertThat(DeadLetterCheck.wrong(found, List.of("a", "b"))).isEqualTo(2);
    assertThat(DeadLetterCheck.describe(found, List.of("a", "b"))).contains("o-1", "[b]");
  }

  @Test
  void aKeylessMessageDeadLetteredForAnotherCauseIsWrong() {
    List<DeadLetteredMessage> found = List.of(deadLetter(DeadLetterCheck.keyless("a"), "NON_RETRYABLE"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"))).isEqualTo(2);
  }
}
