package io.idem.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 helpers. Thread-safe. */
public final class Fingerprints {
  /**
   * One digest per thread: a {@link MessageDigest} is not thread-safe, and {@code getInstance}
   * looks the algorithm up in the security providers on every call (a measurable part of the
   * per-message CPU); {@link MessageDigest#digest(byte[])} resets it after each use.
   */
  private static final ThreadLocal<MessageDigest> SHA_256 = ThreadLocal.withInitial(Fingerprints::newSha256);

  private Fingerprints() {}

  /** SHA-256 of {@code bytes}; 32 bytes. */
  public static byte[] sha256(byte[] bytes) {
    return SHA_256.get().digest(bytes);
  }

  private static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform must support SHA-256", e);
    }
  }

  /** {@code "sha256:" + lowercase hex of SHA-256(UTF-8 text)}; 71 characters. */
  public static String hashedKey(String text) {
    return "sha256:" + HexFormat.of().formatHex(sha256(text.getBytes(StandardCharsets.UTF_8)));
  }
}
