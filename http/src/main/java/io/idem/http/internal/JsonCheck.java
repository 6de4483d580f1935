package io.idem.http.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Whether a body that says it is JSON is well-formed JSON (one value, nothing after it), with
 * Jackson's streaming parser: no tree is built. Thread-safe.
 */
public final class JsonCheck {
  private static final JsonFactory FACTORY = JsonFactory.builder()
      .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .build();

  private JsonCheck() {}

  /** Whether {@code contentType} is {@code application/json} or a {@code +json} type. */
  public static boolean isJson(@Nullable String contentType) {
    if (contentType == null) {
      return false;
    }
    String type = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    return type.equals("application/json") || (type.startsWith("application/") && type.endsWith("+json"));
  }

  /** The parser's complaint, or {@code null} when {@code body} is one well-formed JSON value. */
  public static @Nullable String problem(byte[] body) {
    try (JsonParser parser = FACTORY.createParser(body)) {
      if (parser.nextToken() == null) {
        return "the body is empty";
      }
      parser.skipChildren();
      if (parser.nextToken() != null) {
        return "more than one JSON value";
      }
      return null;
    } catch (IOException e) {
      String message = String.valueOf(e.getMessage());
      int end = message.indexOf('\n');
      return end < 0 ? message : message.substring(0, end);
    }
  }
}
