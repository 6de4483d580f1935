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

  private static DeadLetteredMessage copy(Outbound original, String offset) {
    return new DeadLetteredMessage(Map.of("idem-dead-letter-cause", "NO_KEY", "idem-original-offset", offset,
        "idem-attempt", offset), original.payload());
  }

  @Test
  void aSecondCopyWithTheSameIdentifiersIsRightUpToTheCopiesAllowed() {
    Outbound a = DeadLetterCheck.keyless("a");
    List<DeadLetteredMessage> found = List.of(copy(a, "7"), copy(a, "7"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"), 2)).isZero();
    assertThat(DeadLetterCheck.wrong(found, List.of("a"), 1)).as("a copy beyond the crashes").isEqualTo(1);
  }

  @Test
  void aSecondCopyWithOtherIdentifiersIsWrong() {
    Outbound a = DeadLetterCheck.keyless("a");
    List<DeadLetteredMessage> found = List.of(copy(a, "7"), copy(a, "8"));

    assertThat(DeadLetterCheck.wrong(found, List.of("a"), 2)).isEqualTo(1);
  }
}
