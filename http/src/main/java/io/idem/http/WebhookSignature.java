package io.idem.http;

import io.idem.IdempotencyKeyExtractor;
import io.idem.http.internal.GitHubSignature;
import io.idem.http.internal.StandardWebhooksSignature;
import io.idem.http.internal.StripeSignature;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * How a webhook sender signs its requests, checked by {@link WebhookEndpoint} before anything else
 * (before the key is read, before any database access). Every scheme here is HMAC-SHA256 compared
 * in constant time ({@link java.security.MessageDigest#isEqual}) and takes several secrets: during
 * a rotation configure the new and the old one, and a request signed with either passes.
 * Implementations are immutable and thread-safe.
 */
public interface WebhookSignature {
  /** Default tolerance of a signed timestamp, either way: 5 minutes (Stripe's and Standard Webhooks'). */
  Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

  /**
   * Checks the request.
   *
   * @param headers the request's headers by name, any case ({@code null} when absent)
   * @param body the body's exact bytes
   * @param now the time the timestamp is checked against
   */
  SignatureCheck verify(Function<String, @Nullable String> headers, byte[] body, Instant now);

  /** Where this sender puts its event id, the key unless the endpoint is given another. */
  IdempotencyKeyExtractor defaultKeyExtractor();

  /**
   * Stripe: {@code Stripe-Signature: t=…,v1=…}, the HMAC of {@code t.body} under the endpoint's
   * signing secret ({@code whsec_…}), the timestamp within {@link #DEFAULT_TOLERANCE}; the key is
   * the body's {@code id}.
   */
  static WebhookSignature stripe(String... secrets) {
    return stripe(DEFAULT_TOLERANCE, secrets);
  }

  /** {@link #stripe(String...)} with another tolerance (positive). */
  static WebhookSignature stripe(Duration tolerance, String... secrets) {
    return new StripeSignature(tolerance(tolerance), secrets("stripe", secrets));
  }

  /**
   * GitHub: {@code X-Hub-Signature-256: sha256=…}, the HMAC of the body under the webhook's
   * secret; the key is {@code X-GitHub-Delivery}. GitHub signs no timestamp.
   */
  static WebhookSignature github(String... secrets) {
    return new GitHubSignature(secrets("github", secrets));
  }

  /**
   * Standard Webhooks (Svix and others): {@code webhook-signature: v1,<base64>} over {@code
   * id.timestamp.body} under a {@code whsec_<base64>} secret, the timestamp within {@link
   * #DEFAULT_TOLERANCE}; the key is {@code webhook-id}.
   *
   * @throws IllegalArgumentException when a secret is not base64
   */
  static WebhookSignature standardWebhooks(String... secrets) {
    return standardWebhooks(DEFAULT_TOLERANCE, secrets);
  }

  /** {@link #standardWebhooks(String...)} with another tolerance (positive). */
  static WebhookSignature standardWebhooks(Duration tolerance, String... secrets) {
    return new StandardWebhooksSignature(tolerance(tolerance), secrets("standardWebhooks", secrets));
  }

  /**
   * The {@code Stripe-Signature} header a Stripe-style sender sends for {@code body} at {@code
   * timestampSeconds} (unix seconds) under {@code secret}: {@code t=…,v1=<hex HMAC-SHA256 of
   * "t.body">}. For tests and senders of your own.
   */
  static String stripeSignatureHeader(String secret, long timestampSeconds, byte[] body) {
    return StripeSignature.sign(secret, timestampSeconds, body);
  }

  private static Duration tolerance(Duration tolerance) {
    Objects.requireNonNull(tolerance, "tolerance");
    if (tolerance.isNegative() || tolerance.toSeconds() < 1) {
      throw new IllegalArgumentException("tolerance must be at least 1 s, but was " + tolerance);
    }
    return tolerance;
  }

  private static List<String> secrets(String scheme, String... secrets) {
    if (secrets.length == 0) {
      throw new IllegalArgumentException(scheme + " needs at least one secret, but got none");
    }
    for (int i = 0; i < secrets.length; i++) {
      if (secrets[i] == null || secrets[i].isBlank()) {
        throw new IllegalArgumentException("secrets[" + i + "] must not be blank");
      }
    }
    return List.of(secrets);
  }
}
