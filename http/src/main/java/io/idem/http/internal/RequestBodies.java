package io.idem.http.internal;

import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.io.InputStream;
import org.jspecify.annotations.Nullable;

/** Reads a request body whole, up to a limit. Stateless. */
public final class RequestBodies {
  private RequestBodies() {}

  /**
   * The body's bytes, or {@code null} when it is longer than {@code maxBytes} (a declared
   * {@code Content-Length} over the limit is refused before reading anything).
   */
  public static byte @Nullable [] read(HttpServletRequest request, int maxBytes) throws IOException {
    long declared = request.getContentLengthLong();
    if (declared > maxBytes) {
      return null;
    }
    InputStream in = request.getInputStream();
    byte[] bytes = in.readNBytes(maxBytes + 1);
    return bytes.length > maxBytes ? null : bytes;
  }
}
