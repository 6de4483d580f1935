package io.idem.http.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.http.SignatureCheck;
import io.idem.http.SignatureCheck.Failure;
import io.idem.http.WebhookSignature;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Standard Webhooks (the specification's "Verifying webhook authenticity"): headers {@code
 * webhook-id}, {@code webhook-timestamp} (unix seconds) and {@code webhook-signature}, a
 * space-separated list of {@code <version>,<base64>}; a {@code v1} signature is the HMAC-SHA256 of
 * {@code id + "." + timestamp + "." + body} under the secret, which is given base64-encoded with
 * an optional {@code whsec_} prefix. Signatures of other versions ({@code v1a}: ed25519) are
 * ignored; none of {@code v1} is an unknown scheme. The timestamp must be within the tolerance of
 * now, either way. Immutable.
 */
public final class StandardWebhooksSignature implements WebhookSignature {
  public static final String ID_HEADER = "webhook-id";
  public static final String TIMESTAMP_HEADER = "webhook-timestamp";
  public static final String SIGNATURE_HEADER = "webhook-signature";
  /** The prefix of a serialized secret: {@value}. */
  public static final String SECRET_PREFIX = "whsec_";

  private final Duration tolerance;
  private final List<byte[]> secrets;

  /**
   * @throws IllegalArgumentException when a secret is not base64 (after the optional prefix)
   */
  public StandardWebhooksSignature(Duration tolerance, List<String> secrets) {
    this.tolerance = tolerance;
    List<byte[]> keys = new ArrayList<>();
    for (int i = 0; i < secrets.size(); i++) {
      keys.add(decodeSecret(secrets.get(i), i));
    }
    this.secrets = List.copyOf(keys);
  }

  private static byte[] decodeSecret(String secret, int index) {
    String encoded = secret.startsWith(SECRET_PREFIX) ? secret.substring(SECRET_PREFIX.length()) : secret;
    try {
      return Base64.getDecoder().decode(encoded);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("secrets[" + index + "] must be base64 (optionally prefixed"
          + " with " + SECRET_PREFIX + "), but is not: " + e.getMessage());
    }
  }

  @Override
  public SignatureCheck verify(Function<String, @Nullable String> headers, byte[] body, Instant now) {
    String id = headers.apply(ID_HEADER);
    String timestampText = headers.apply(TIMESTAMP_HEADER);
    String header = headers.apply(SIGNATURE_HEADER);
    if (header == null || header.isBlank()) {
      return SignatureCheck.refused(Failure.MISSING, "no " + SIGNATURE_HEADER + " header");
    }
    if (id == null || id.isBlank() || timestampText == null || timestampText.isBlank()) {
      return SignatureCheck.refused(Failure.MALFORMED, SIGNATURE_HEADER + " needs " + ID_HEADER
          + " and " + TIMESTAMP_HEADER + ", which are signed with it");
    }
    long timestamp;
    try {
      timestamp = Long.parseLong(timestampText.strip());
    } catch (NumberFormatException e) {
      return SignatureCheck.refused(Failure.MALFORMED, TIMESTAMP_HEADER + " is not a number of seconds");
    }
    List<byte[]> v1 = new ArrayList<>();
    Set<String> others = new LinkedHashSet<>();
    for (String item : header.strip().split(" +")) {
      int comma = item.indexOf(',');
      if (comma <= 0) {
        return SignatureCheck.refused(Failure.MALFORMED, SIGNATURE_HEADER + " item '" + item
            + "' is not <version>,<base64>");
      }
      String version = item.substring(0, comma);
      if (!version.equals("v1")) {
        others.add(version);
        continue;
      }
      try {
        v1.add(Base64.getDecoder().decode(item.substring(comma + 1)));
      } catch (IllegalArgumentException e) {
        v1.add(new byte[0]); // not base64: matches nothing, as a wrong signature
      }
    }
    if (v1.isEmpty()) {
      return SignatureCheck.refused(Failure.UNKNOWN_SCHEME, SIGNATURE_HEADER + " has no v1 signature"
          + " (only " + String.join(", ", others) + "); only v1 (HMAC-SHA256) is accepted");
    }
    byte[] signed = (id.strip() + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8);
    if (!Hmac.anyMatches(secrets, v1, signed, body)) {
      return SignatureCheck.refused(Failure.MISMATCH, "no " + SIGNATURE_HEADER + " v1 signature"
          + " matches under the configured secret(s)");
    }
    long age = now.getEpochSecond() - timestamp;
    if (Math.abs(age) > tolerance.toSeconds()) {
      return SignatureCheck.refused(Failure.STALE, TIMESTAMP_HEADER + " " + timestamp + " is " + age
          + " s from now, outside the tolerance of " + tolerance.toSeconds() + " s");
    }
    return SignatureCheck.valid("Standard Webhooks v1 signature, timestamp " + timestamp);
  }

  /** The message id, the same on every retry: {@value #ID_HEADER}. */
  @Override
  public IdempotencyKeyExtractor defaultKeyExtractor() {
    return IdempotencyKeyExtractor.header(ID_HEADER);
  }

  @Override
  public String toString() {
    return "WebhookSignature.standardWebhooks(tolerance=" + tolerance + ", " + secrets.size() + " secret(s))";
  }
}
