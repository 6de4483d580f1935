package io.idem.http;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link WebhookSignature} found: the request is authentic, or why not. A value, not an
 * exception; the endpoint answers a failure with its {@link Failure#status()} and a problem+json
 * body, before anything else is read or written.
 *
 * @param failure {@code null} when the signature is valid
 * @param detail what was checked or what was wrong, for the answer and the log (never a secret)
 */
public record SignatureCheck(@Nullable Failure failure, String detail) {

  /** Why a signature was refused, with the status the endpoint answers. */
  public enum Failure {
    /** The signature header (or a header it needs) is absent: 401. */
    MISSING(401),
    /** The header is there but cannot be parsed: 400. */
    MALFORMED(400),
    /** Only signatures of schemes this verifier does not accept (Stripe {@code v0}, GitHub {@code sha1}, Standard Webhooks {@code v1a}): 400. */
    UNKNOWN_SCHEME(400),
    /** No signature matches any of the configured secrets: 401. */
    MISMATCH(401),
    /** A valid signature whose timestamp is outside the tolerance (a replay, or a skewed clock): 401. */
    STALE(401);

    private final int status;

    Failure(int status) {
      this.status = status;
    }

    /** The HTTP status the endpoint answers. */
    public int status() {
      return status;
    }
  }

  public SignatureCheck {
    Objects.requireNonNull(detail, "detail");
  }

  /** The signature is valid. */
  public static SignatureCheck valid(String detail) {
    return new SignatureCheck(null, detail);
  }

  /** The signature is refused. */
  public static SignatureCheck refused(Failure failure, String detail) {
    return new SignatureCheck(Objects.requireNonNull(failure, "failure"), detail);
  }

  public boolean isValid() {
    return failure == null;
  }
}
