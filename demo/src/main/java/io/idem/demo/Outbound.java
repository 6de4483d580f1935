package io.idem.demo;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A message to publish: headers as raw bytes (so a test can send a value that is not valid UTF-8)
 * and the payload. Brokers whose headers are text-only ({@link DemoBroker#supportsBinaryHeaders()}
 * false) refuse a value that does not decode.
 *
 * @param headers header name → value bytes (normally UTF-8 text); insertion-ordered
 * @param payload body bytes
 */
public record Outbound(Map<String, byte[]> headers, byte[] payload) {

  /** The header Idem's default key extractor reads. */
  public static final String KEY_HEADER = "idempotency-key";

  public Outbound {
    Objects.requireNonNull(headers, "headers");
    Objects.requireNonNull(payload, "payload");
  }

  /** A message keyed by {@value #KEY_HEADER}. */
  public static Outbound keyed(String key, byte[] payload) {
    return new Outbound(Map.of(KEY_HEADER, key.getBytes(StandardCharsets.UTF_8)), payload);
  }

  /** A message with text headers. */
  public static Outbound of(Map<String, String> headers, byte[] payload) {
    Map<String, byte[]> raw = new LinkedHashMap<>();
    headers.forEach((name, value) -> raw.put(name, value.getBytes(StandardCharsets.UTF_8)));
    return new Outbound(raw, payload);
  }

  /** The header as text, or {@code null}; invalid UTF-8 is replaced, for logs only. */
  public @Nullable String text(String header) {
    byte[] value = headers.get(header);
    return value == null ? null : new String(value, StandardCharsets.UTF_8);
  }
}
