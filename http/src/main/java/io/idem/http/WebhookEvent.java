package io.idem.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * One authenticated webhook delivery, as its handler gets it: the event id (the idempotency key),
 * the headers (any case), and the body's exact bytes. The body array is shared: do not modify it.
 *
 * @param id the sender's event id (Stripe's {@code evt_…}, GitHub's delivery GUID, {@code webhook-id})
 * @param headers request headers, case-insensitive, unmodifiable
 * @param body the body as received (and signed)
 * @param request the servlet request, for anything else (its body was already read)
 */
public record WebhookEvent(String id, Map<String, String> headers, byte[] body, HttpServletRequest request) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The body as UTF-8 text. */
  public String text() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /**
   * The body parsed as JSON (the endpoint already refused malformed JSON under a JSON content type).
   *
   * @throws UncheckedIOException when it is not JSON
   */
  public JsonNode json() {
    try {
      return JSON.readTree(body);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
