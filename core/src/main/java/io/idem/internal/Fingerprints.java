package io.idem.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 helpers. */
public final class Fingerprints {
  private Fingerprints() {}

  /** SHA-256 of {@code bytes}; 32 bytes. */
  public static byte[] sha256(byte[] bytes) {
    try {
      // MessageDigest instances are not thread-safe; getInstance is cheap enough per message.
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must support SHA-256", e);
    }
  }

  /** {@code "sha256:" + lowercase hex of SHA-256(UTF-8 text)}; 71 characters. */
  public static String hashedKey(String text) {
    return "sha256:" + HexFormat.of().formatHex(sha256(text.getBytes(StandardCharsets.UTF_8)));
  }
}
