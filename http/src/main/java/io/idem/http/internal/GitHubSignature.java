package io.idem.http.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.http.SignatureCheck;
import io.idem.http.SignatureCheck.Failure;
import io.idem.http.WebhookSignature;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * GitHub's {@code X-Hub-Signature-256: sha256=<hex>}: the HMAC-SHA256 of the body under the
 * webhook's secret (its UTF-8 bytes). GitHub sends no timestamp, so there is no tolerance: a
 * replay of a delivery is caught by its {@code X-GitHub-Delivery} key instead. The legacy SHA-1
 * {@code X-Hub-Signature} alone is an unknown scheme. Immutable.
 */
public final class GitHubSignature implements WebhookSignature {
  /** The header: {@value}. */
  public static final String HEADER = "X-Hub-Signature-256";
  /** The delivery id, the key by default: {@value}. */
  public static final String DELIVERY_HEADER = "X-GitHub-Delivery";

  private final List<byte[]> secrets;

  public GitHubSignature(List<String> secrets) {
    this.secrets = secrets.stream().map(s -> s.getBytes(StandardCharsets.UTF_8)).toList();
  }

  @Override
  public SignatureCheck verify(Function<String, @Nullable String> headers, byte[] body, Instant now) {
    String header = headers.apply(HEADER);
    if (header == null || header.isBlank()) {
      if (headers.apply("X-Hub-Signature") != null) {
        return SignatureCheck.refused(Failure.UNKNOWN_SCHEME, "only the SHA-1 X-Hub-Signature is"
            + " present; " + HEADER + " (HMAC-SHA256) is required");
      }
      return SignatureCheck.refused(Failure.MISSING, "no " + HEADER + " header");
    }
    String value = header.strip();
    int eq = value.indexOf('=');
    if (eq <= 0) {
      return SignatureCheck.refused(Failure.MALFORMED, HEADER + " is not <algorithm>=<hex>");
    }
    if (!value.substring(0, eq).equals("sha256")) {
      return SignatureCheck.refused(Failure.UNKNOWN_SCHEME, HEADER + " algorithm '"
          + value.substring(0, eq) + "' is not sha256");
    }
    byte[] signature = Hmac.hex256(value.substring(eq + 1));
    if (signature == null) {
      return SignatureCheck.refused(Failure.MALFORMED, HEADER + " is not sha256= and 64 hex digits");
    }
    if (!Hmac.anyMatches(secrets, List.of(signature), body)) {
      return SignatureCheck.refused(Failure.MISMATCH, HEADER + " does not match the body under the"
          + " configured secret(s)");
    }
    return SignatureCheck.valid("GitHub sha256 signature");
  }

  /** GitHub's delivery id, the same on a redelivery: {@value #DELIVERY_HEADER}. */
  @Override
  public IdempotencyKeyExtractor defaultKeyExtractor() {
    return IdempotencyKeyExtractor.header(DELIVERY_HEADER);
  }

  @Override
  public String toString() {
    return "WebhookSignature.github(" + secrets.size() + " secret(s))";
  }
}
