package io.idem.http.internal;

import io.idem.InboundMessage;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The request as a key extractor of core sees it: the payload is the body alone, headers are
 * looked up in any case, so that {@code IdempotencyKeyExtractor.jsonPointer("/id")} reads the
 * body's field and {@code header("X-GitHub-Delivery")} the header whatever its case. Immutable.
 */
public final class BodyView implements InboundMessage {
  private final String source;
  private final Map<String, String> headers;
  private final byte[] body;
  private final HttpServletRequest request;
  private final Instant receivedAt = Instant.now();

  public BodyView(String source, HttpServletRequest request, byte[] body) {
    this.source = source;
    this.request = request;
    this.headers = HttpMessage.headersOf(request);
    this.body = body;
  }

  @Override
  public String source() {
    return source;
  }

  @Override
  public Map<String, String> headers() {
    return headers;
  }

  @Override
  public byte[] payload() {
    return body;
  }

  @Override
  public @Nullable String brokerMessageId() {
    return null;
  }

  @Override
  public int deliveryAttempt() {
    return 1;
  }

  @Override
  public Instant receivedAt() {
    return receivedAt;
  }

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(request) ? Optional.of(type.cast(request)) : Optional.empty();
  }
}
