package io.idem.http.internal;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * HMAC-SHA256 and the constant-time comparison every scheme uses ({@link MessageDigest#isEqual},
 * whose time does not depend on where two arrays of one length differ). Stateless.
 */
public final class Hmac {
  private Hmac() {}

  /** HMAC-SHA256 of the concatenated {@code parts} under {@code key}. */
  public static byte[] sha256(byte[] key, byte[]... parts) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      for (byte[] part : parts) {
        mac.update(part);
      }
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
    }
  }

  /**
   * Whether one of {@code candidates} equals the HMAC of {@code parts} under one of {@code
   * secrets}; every pair is compared (no early exit on the secret that matched), in constant time.
   */
  public static boolean anyMatches(List<byte[]> secrets, List<byte[]> candidates, byte[]... parts) {
    boolean matched = false;
    for (byte[] secret : secrets) {
      byte[] expected = sha256(secret, parts);
      for (byte[] candidate : candidates) {
        matched |= MessageDigest.isEqual(expected, candidate);
      }
    }
    return matched;
  }

  /** Lower-case hex decoded, or {@code null} when {@code text} is not hex of 64 digits. */
  public static byte @Nullable [] hex256(String text) {
    if (text.length() != 64) {
      return null;
    }
    try {
      return HexFormat.of().parseHex(text.toLowerCase(java.util.Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }
}
