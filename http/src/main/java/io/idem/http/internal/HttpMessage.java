package io.idem.http.internal;

import io.idem.InboundMessage;
import io.idem.KeySource;
import jakarta.servlet.http.HttpServletRequest;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collections;
import java.util.Enumeration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;

/**
 * One HTTP request as the pipeline's {@link InboundMessage}: the source is the endpoint, the
 * headers the request's (looked up in any case, several values of one name joined with {@code
 * ", "}), the payload what the fingerprint covers — {@code METHOD SP request-target LF body} — and
 * the broker message id unique per request (a random prefix per JVM and a counter), so that a dead-letter decision recorded for one
 * request is released by the next one with its key (docs/HTTP.md, "Failures"). The key was read
 * and checked before (it is carried here for the pipeline's key extractor), and so was the body.
 * Every request is delivery attempt 1: the client's retries are new requests. Immutable but for
 * the exchange it carries, which is confined to the request's thread.
 */
public final class HttpMessage implements InboundMessage {
  private final String source;
  private final Map<String, String> headers;
  private final byte[] payload;
  private final byte[] body;
  /** This JVM's prefix of request ids: random, so two instances never share one. */
  private static final String JVM = UUID.randomUUID().toString();
  private static final java.util.concurrent.atomic.AtomicLong NEXT = new java.util.concurrent.atomic.AtomicLong();

  private final String id = JVM + "/" + NEXT.incrementAndGet();
  private final Instant receivedAt = Instant.now();
  private final HttpServletRequest request;
  private final String key;
  private final KeySource keySource;
  private final String keyOrigin;
  private final Exchange<?> exchange;

  public HttpMessage(String source, HttpServletRequest request, byte[] body, String key,
      KeySource keySource, String keyOrigin, Exchange<?> exchange) {
    this.source = source;
    this.request = request;
    this.body = body;
    this.headers = headersOf(request);
    this.payload = fingerprinted(request, body);
    this.key = key;
    this.keySource = keySource;
    this.keyOrigin = keyOrigin;
    this.exchange = exchange;
  }

  /** The request's headers, case-insensitive, unmodifiable. */
  public static Map<String, String> headersOf(HttpServletRequest request) {
    TreeMap<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    Enumeration<String> names = request.getHeaderNames();
    while (names != null && names.hasMoreElements()) {
      String name = names.nextElement();
      String joined = String.join(", ", Collections.list(request.getHeaders(name)));
      headers.merge(name, joined, (a, b) -> a + ", " + b);
    }
    return Collections.unmodifiableMap(headers);
  }

  /** {@code METHOD SP request-target LF body}: neither the method nor the target can hold a LF. */
  static byte[] fingerprinted(HttpServletRequest request, byte[] body) {
    String target = request.getRequestURI();
    if (request.getQueryString() != null) {
      target += "?" + request.getQueryString();
    }
    byte[] head = (request.getMethod() + " " + target + "\n").getBytes(StandardCharsets.UTF_8);
    byte[] payload = new byte[head.length + body.length];
    System.arraycopy(head, 0, payload, 0, head.length);
    System.arraycopy(body, 0, payload, head.length, body.length);
    return payload;
  }

  @Override
  public String source() {
    return source;
  }

  @Override
  public Map<String, String> headers() {
    return headers;
  }

  /** The fingerprinted form (method, target, body); {@link #body()} is the body alone. */
  @Override
  public byte[] payload() {
    return payload;
  }

  /** The request body as received. */
  public byte[] body() {
    return body;
  }

  @Override
  public String brokerMessageId() {
    return id;
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

  public String key() {
    return key;
  }

  public KeySource keySource() {
    return keySource;
  }

  public String keyOrigin() {
    return keyOrigin;
  }

  public Exchange<?> exchange() {
    return exchange;
  }

  @Override
  public String toString() {
    return "HttpMessage[" + request.getMethod() + " " + request.getRequestURI() + ", key " + key + "]";
  }
}
