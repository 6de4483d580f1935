package io.idem.examples;

import io.idem.NonRetryableException;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * An outbox publisher for a plain HTTP API such as a payment provider: each row is a {@code POST}
 * to {@code baseUri} resolved against the row's destination (a path such as {@code
 * "v1/charges"}), with the row's key as the API's {@code Idempotency-Key} header — the header
 * payment APIs deduplicate retries by, so the relay's at-least-once publish charges once.
 *
 * <p>Answers: 2xx is confirmed; 409 (the API is still working on the same key), 429 and 5xx are
 * retried with the relay's backoff; any other status is refused for good ({@link
 * NonRetryableException}: the row is parked with the status and the start of the body). Extra
 * headers of the row become request headers. Thread-safe (HttpClient is).
 */
public final class HttpOutboxPublisher implements OutboxPublisher {
  /** The request header the key travels in: {@value}. */
  public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

  private final HttpClient client;
  private final URI baseUri;
  private final Duration timeout;

  /**
   * @param baseUri the API's root, ending in {@code /} (destinations are resolved against it)
   * @param timeout how long one request may take, > 0
   */
  public HttpOutboxPublisher(HttpClient client, URI baseUri, Duration timeout) {
    this.client = Objects.requireNonNull(client, "client");
    this.baseUri = Objects.requireNonNull(baseUri, "baseUri");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
    if (timeout.isZero() || timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be > 0, but was " + timeout);
    }
  }

  /**
   * Sends the row and returns once the API answered 2xx.
   *
   * @throws IOException on 409, 429, 5xx or a failed connection (retried by the relay)
   * @throws NonRetryableException on any other status (parked)
   */
  @Override
  public void publish(OutboxMessage message) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(baseUri.resolve(message.destination()))
        .timeout(timeout)
        .header(IDEMPOTENCY_KEY_HEADER, message.idempotencyKey())
        .POST(HttpRequest.BodyPublishers.ofByteArray(message.payload()));
    for (Map.Entry<String, String> header : message.headers().entrySet()) {
      request.header(header.getKey(), header.getValue());
    }
    HttpResponse<String> response = client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    int status = response.statusCode();
    if (status >= 200 && status < 300) {
      return;
    }
    String answer = "HTTP " + status + " from " + response.uri() + ": "
        + response.body().substring(0, Math.min(200, response.body().length()));
    if (status == 409 || status == 429 || status >= 500) {
      throw new IOException(answer);
    }
    throw new NonRetryableException(answer);
  }
}
