package io.idem.http.spi;

import java.util.List;
import java.util.Objects;

/**
 * The first response to an Idempotency-Key request, as stored with its key and replayed for every
 * repeat: the status, the headers chosen for replay ({@code IdempotencyKeyEndpoint.Builder
 * #storedHeaders}), and the body's exact bytes. Immutable; the body array is not copied, callers
 * must not modify it.
 *
 * @param status the HTTP status, 100 to 599
 * @param headers name/value pairs in the order the handler set them (a name may repeat)
 * @param body the body bytes as the handler wrote them (after its character encoding)
 */
public record StoredResponse(int status, List<Header> headers, byte[] body) {

  /** One response header. */
  public record Header(String name, String value) {
    public Header {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
    }
  }

  /**
   * @throws IllegalArgumentException when the status is outside 100–599
   */
  public StoredResponse {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be between 100 and 599, but was " + status);
    }
    headers = List.copyOf(headers);
    Objects.requireNonNull(body, "body");
  }
}
