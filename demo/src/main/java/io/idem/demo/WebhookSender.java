package io.idem.demo;

import io.idem.http.WebhookSignature;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A webhook sender as Stripe is one: each event POSTed with a {@code Stripe-Signature} ({@code
 * t=<now>,v1=<HMAC-SHA256 of t.body>}, signed anew for every attempt), a request timeout, and
 * retried with a growing backoff until the receiver answers 2xx — through timeouts, refused
 * connections and 5xx while the receiver is killed and restarted. A 4xx is not retried (the
 * sender gives up on it: the ledger fails). Several threads send at once. Thread-safe counters.
 */
final class WebhookSender {
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(1);

  private final URI uri;
  private final String secret;
  private final HttpClient client = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(2))
      .build();
  final AtomicLong attempts = new AtomicLong();
  final AtomicLong answered = new AtomicLong();
  final AtomicLong duplicates = new AtomicLong();
  final AtomicLong refused = new AtomicLong();
  final AtomicLong acknowledged = new AtomicLong();

  WebhookSender(URI uri, String secret) {
    this.uri = uri;
    this.secret = secret;
  }

  /** Sends {@code bodies[i]} for every {@code i} taken from {@code next}, until none is left. */
  void sendAll(List<byte[]> bodies, AtomicInteger next, Instant deadline) throws InterruptedException {
    for (int i = next.getAndIncrement(); i < bodies.size(); i = next.getAndIncrement()) {
      deliver(bodies.get(i), deadline);
    }
  }

  private void deliver(byte[] body, Instant deadline) throws InterruptedException {
    long backoffMillis = 50;
    while (Instant.now().isBefore(deadline)) {
      attempts.incrementAndGet();
      String signature = WebhookSignature.stripeSignatureHeader(secret, Instant.now().getEpochSecond(), body);
      HttpRequest request = HttpRequest.newBuilder(uri)
          .timeout(REQUEST_TIMEOUT)
          .header("Content-Type", "application/json")
          .header("Stripe-Signature", signature)
          .POST(HttpRequest.BodyPublishers.ofByteArray(body))
          .build();
      try {
        HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
        answered.incrementAndGet();
        int status = response.statusCode();
        if (status / 100 == 2) {
          acknowledged.incrementAndGet();
          if (response.body().contains("\"duplicate\"")) {
            duplicates.incrementAndGet();
          }
          return;
        }
        if (status / 100 == 4) {
          refused.incrementAndGet();
          System.err.println("[sender] refused with " + status + ": "
              + new String(body, StandardCharsets.UTF_8) + " -> " + response.body());
          return;
        }
      } catch (IOException e) {
        // the receiver is down or was killed mid-request: retried, as a webhook sender does
      }
      Thread.sleep(backoffMillis);
      backoffMillis = Math.min(MAX_BACKOFF.toMillis(), backoffMillis * 2);
    }
  }
}
