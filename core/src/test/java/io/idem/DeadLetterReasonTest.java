package io.idem;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.CharBuffer;
import org.junit.jupiter.api.Test;

class DeadLetterReasonTest {

  @Test
  void aLongDetailIsNeverCutInsideASurrogatePair() throws CharacterCodingException {
    // an emoji (two UTF-16 chars) straddling the cut
    String detail = "x".repeat(DeadLetterReason.MAX_DETAIL_LENGTH - 1) + "\uD83D\uDE00" + "tail";
    DeadLetterReason reason = new DeadLetterReason(
        DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, detail, "g", "k", 3, null);
    String header = reason.toHeaders().get(DeadLetterReason.HEADER_DETAIL);
    assertThat(header).endsWith("x…");
    // encodable as strict UTF-8: no lone surrogate
    StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
        .encode(CharBuffer.wrap(header));
  }
}
