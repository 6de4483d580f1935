package io.idem.http.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Error answers as RFC 9457 problem details ({@code application/problem+json}): {@code type} (a
 * link to the rule in docs/HTTP.md), {@code title}, {@code status}, {@code detail}. Each problem
 * Idem answers has a constant here, so that the documentation and the code name the same ones.
 * Thread-safe.
 */
public final class Problems {
  /** Media type of every error answer: {@value}. */
  public static final String MEDIA_TYPE = "application/problem+json";

  private static final String DOCS = "https://github.com/idem-io/idem/blob/main/docs/HTTP.md#";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One kind of problem: its status, title and anchor in docs/HTTP.md. */
  public record Problem(int status, String name, String title) {
    public String type() {
      return DOCS + name;
    }
  }

  public static final Problem MISSING_KEY =
      new Problem(400, "missing-idempotency-key", "Idempotency-Key header required");
  public static final Problem INVALID_KEY =
      new Problem(400, "invalid-idempotency-key", "Idempotency key not usable");
  public static final Problem MALFORMED_JSON =
      new Problem(400, "malformed-json", "Request body is not valid JSON");
  public static final Problem BODY_TOO_LARGE =
      new Problem(413, "body-too-large", "Request body over the limit");
  public static final Problem NO_CLIENT =
      new Problem(401, "no-client", "No client identity to scope the idempotency key");
  public static final Problem SIGNATURE_MISSING =
      new Problem(401, "signature-missing", "Webhook signature missing");
  public static final Problem SIGNATURE_MALFORMED =
      new Problem(400, "signature-malformed", "Webhook signature header malformed");
  public static final Problem SIGNATURE_SCHEME =
      new Problem(400, "unknown-signature-scheme", "Webhook signature scheme not accepted");
  public static final Problem SIGNATURE_MISMATCH =
      new Problem(401, "signature-mismatch", "Webhook signature does not match");
  public static final Problem SIGNATURE_STALE =
      new Problem(401, "signature-stale", "Webhook signature timestamp outside the tolerance");
  public static final Problem IN_FLIGHT =
      new Problem(409, "request-in-flight", "A request with this idempotency key is in progress");
  public static final Problem KEY_REUSED =
      new Problem(422, "idempotency-key-reused", "Idempotency key reused for a different request");
  public static final Problem HANDLER_FAILED =
      new Problem(500, "handler-failed", "The request failed and was rolled back");
  public static final Problem RESPONSE_MISSING =
      new Problem(500, "stored-response-missing", "The request was processed but its response is not stored");
  public static final Problem UNAVAILABLE =
      new Problem(503, "store-unavailable", "The database is unavailable; nothing was applied");

  private Problems() {}

  /**
   * Writes {@code problem} with {@code detail}; {@code retryAfter} adds {@code Retry-After} (whole
   * seconds, rounded up) when not {@code null}. Resets whatever the response held.
   */
  public static void write(HttpServletResponse response, Problem problem, String detail,
      @Nullable Duration retryAfter) throws IOException {
    ObjectNode body = JSON.createObjectNode();
    body.put("type", problem.type());
    body.put("title", problem.title());
    body.put("status", problem.status());
    body.put("detail", detail);
    byte[] bytes = JSON.writeValueAsBytes(body);
    if (!response.isCommitted()) {
      response.reset();
    }
    response.setStatus(problem.status());
    response.setContentType(MEDIA_TYPE);
    if (retryAfter != null) {
      response.setHeader("Retry-After", Long.toString(retryAfterSeconds(retryAfter)));
    }
    response.setContentLength(bytes.length);
    response.getOutputStream().write(bytes);
  }

  /** Whole seconds, rounded up, at least 0. */
  public static long retryAfterSeconds(Duration delay) {
    long millis = Math.max(0, delay.toMillis());
    return (millis + 999) / 1000;
  }
}
