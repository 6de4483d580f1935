package io.idem.http.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.http.SignatureCheck;
import io.idem.http.SignatureCheck.Failure;
import io.idem.http.WebhookSignature;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Stripe's {@code Stripe-Signature}: {@code t=<unix seconds>,v1=<hex>[,v1=<hex>…][,v0=…]}, where
 * each {@code v1} is the HMAC-SHA256, hex, of {@code t + "." + body} under an endpoint secret
 * ({@code whsec_…}, used as the UTF-8 bytes of the whole string, as Stripe's libraries do). Other
 * schemes ({@code v0}) are ignored; a header with none of {@code v1} is an unknown scheme. The
 * timestamp must be within the tolerance of now, either way. Immutable.
 */
public final class StripeSignature implements WebhookSignature {
  /** The header: {@value}. */
  public static final String HEADER = "Stripe-Signature";

  private final Duration tolerance;
  private final List<byte[]> secrets;

  public StripeSignature(Duration tolerance, List<String> secrets) {
    this.tolerance = tolerance;
    this.secrets = secrets.stream().map(s -> s.getBytes(StandardCharsets.UTF_8)).toList();
  }

  @Override
  public SignatureCheck verify(Function<String, @Nullable String> headers, byte[] body, Instant now) {
    String header = headers.apply(HEADER);
    if (header == null || header.isBlank()) {
      return SignatureCheck.refused(Failure.MISSING, "no " + HEADER + " header");
    }
    Long timestamp = null;
    List<byte[]> v1 = new ArrayList<>();
    List<String> others = new ArrayList<>();
    for (String item : header.split(",")) {
      int eq = item.indexOf('=');
      if (eq <= 0) {
        return SignatureCheck.refused(Failure.MALFORMED, HEADER + " item '" + item.strip()
            + "' is not <scheme>=<value>");
      }
      String name = item.substring(0, eq).strip();
      String value = item.substring(eq + 1).strip();
      if (name.equals("t")) {
        if (timestamp != null) {
          return SignatureCheck.refused(Failure.MALFORMED, HEADER + " has more than one t=");
        }
        try {
          timestamp = Long.parseLong(value);
        } catch (NumberFormatException e) {
          return SignatureCheck.refused(Failure.MALFORMED, HEADER + " t= is not a number of seconds");
        }
      } else if (name.equals("v1")) {
        byte[] signature = Hmac.hex256(value);
        if (signature == null) {
          return SignatureCheck.refused(Failure.MALFORMED, HEADER + " v1= is not 64 hex digits");
        }
        v1.add(signature);
      } else {
        others.add(name);
      }
    }
    if (timestamp == null) {
      return SignatureCheck.refused(Failure.MALFORMED, HEADER + " has no t= timestamp");
    }
    if (v1.isEmpty()) {
      return SignatureCheck.refused(Failure.UNKNOWN_SCHEME, HEADER + " has no v1 signature (only "
          + String.join(", ", others) + "); only v1 (HMAC-SHA256) is accepted");
    }
    byte[] signed = (timestamp + ".").getBytes(StandardCharsets.US_ASCII);
    if (!Hmac.anyMatches(secrets, v1, signed, body)) {
      return SignatureCheck.refused(Failure.MISMATCH, "no " + HEADER + " v1 signature matches the"
          + " body under the configured secret(s)");
    }
    long age = now.getEpochSecond() - timestamp;
    if (Math.abs(age) > tolerance.toSeconds()) {
      return SignatureCheck.refused(Failure.STALE, HEADER + " timestamp " + timestamp + " is " + age
          + " s from now, outside the tolerance of " + tolerance.toSeconds() + " s");
    }
    return SignatureCheck.valid("Stripe v1 signature, t=" + timestamp);
  }

  /** Stripe's event id: the body's top-level {@code id} ({@code evt_…}). */
  @Override
  public IdempotencyKeyExtractor defaultKeyExtractor() {
    return IdempotencyKeyExtractor.jsonPointer("/id");
  }

  /** A header a Stripe-style sender would send (tests, the main job's sender). */
  public static String sign(String secret, long timestamp, byte[] body) {
    byte[] mac = Hmac.sha256(secret.getBytes(StandardCharsets.UTF_8),
        (timestamp + ".").getBytes(StandardCharsets.US_ASCII), body);
    return "t=" + timestamp + ",v1=" + java.util.HexFormat.of().formatHex(mac);
  }

  @Override
  public String toString() {
    return "WebhookSignature.stripe(tolerance=" + tolerance + ", " + secrets.size() + " secret(s))";
  }
}
