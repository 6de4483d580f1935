package io.idem.spi;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Strict UTF-8 decoding for adapters turning broker header bytes into
 * {@link io.idem.InboundMessage#headers()}: a value that is not well-formed UTF-8 is reported, never
 * silently replaced with U+FFFD (a key read from replaced bytes could collide with another key).
 * Thread-safe.
 */
public final class Utf8 {
  private Utf8() {}

  /**
   * Decodes {@code bytes} as strict UTF-8.
   *
   * @return the text, or {@code null} when the bytes are not well-formed UTF-8 (the caller lists
   *     the header in {@link io.idem.InboundMessage#undecodableHeaders()})
   */
  public static @Nullable String decodeStrict(byte[] bytes) {
    if (isAscii(bytes)) {
      // every byte below 0x80 is a one-byte UTF-8 sequence: no decoder needed (most header values)
      return new String(bytes, StandardCharsets.US_ASCII);
    }
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  private static boolean isAscii(byte[] bytes) {
    for (byte b : bytes) {
      if (b < 0) {
        return false;
      }
    }
    return true;
  }

  /** True when {@code bytes} are well-formed UTF-8. */
  public static boolean isValid(byte[] bytes) {
    return decodeStrict(bytes) != null;
  }
}
