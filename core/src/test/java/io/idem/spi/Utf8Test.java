package io.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Strict UTF-8 header decoding: the ASCII shortcut and the decoder agree; malformed input is reported. */
class Utf8Test {
  @Test
  void asciiIsDecodedAsIs() {
    assertThat(Utf8.decodeStrict("order-42 \u007f".getBytes(StandardCharsets.US_ASCII))).isEqualTo("order-42 \u007f");
    assertThat(Utf8.decodeStrict(new byte[0])).isEmpty();
  }

  @Test
  void wellFormedMultiByteTextIsDecoded() {
    String text = "commande-é-€-😀";
    assertThat(Utf8.decodeStrict(text.getBytes(StandardCharsets.UTF_8))).isEqualTo(text);
  }

  @Test
  void malformedBytesAreReportedNotReplaced() {
    assertThat(Utf8.decodeStrict(new byte[] {'a', (byte) 0xC3})).isNull(); // truncated sequence
    assertThat(Utf8.decodeStrict(new byte[] {(byte) 0xC0, (byte) 0xAF})).isNull(); // overlong '/'
    assertThat(Utf8.decodeStrict(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80})).isNull(); // surrogate
    assertThat(Utf8.decodeStrict(new byte[] {'k', (byte) 0xFF, 'y'})).isNull();
    assertThat(Utf8.isValid(new byte[] {(byte) 0x80})).isFalse();
  }
}
