package io.idem.http.internal;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Reads the {@code Idempotency-Key} header: per the IETF httpapi draft an sf-string (RFC 8941
 * section 3.3.3: {@code "..."} of printable ASCII, {@code \"} and {@code \\} escaped); a bare
 * token of visible ASCII (how Stripe and most clients send it) is accepted too. Stateless.
 */
public final class KeyHeader {
  private KeyHeader() {}

  /** A key, or why there is none. */
  public record Parsed(@Nullable String key, @Nullable String problem) {}

  /**
   * @param values every value of the header in the request (none: absent)
   * @param maxLength the longest key accepted, in characters
   */
  public static Parsed parse(List<String> values, int maxLength) {
    if (values.isEmpty()) {
      return new Parsed(null, null);
    }
    if (values.size() > 1) {
      return new Parsed(null, "the Idempotency-Key header is present " + values.size()
          + " times; send it once");
    }
    String raw = values.get(0).strip();
    String key;
    if (raw.startsWith("\"")) {
      key = sfString(raw);
      if (key == null) {
        return new Parsed(null, "the Idempotency-Key header is not a valid structured-field"
            + " string (RFC 8941): a quoted string of printable ASCII, with \\\" and \\\\ escaped");
      }
    } else {
      for (int i = 0; i < raw.length(); i++) {
        char c = raw.charAt(i);
        if (c < 0x21 || c > 0x7e) {
          return new Parsed(null, "the Idempotency-Key header holds a character that is not visible"
              + " ASCII at index " + i + "; quote the key as an RFC 8941 string if it has spaces");
        }
      }
      key = raw;
    }
    if (key.isBlank()) {
      return new Parsed(null, "the Idempotency-Key header is empty");
    }
    if (key.length() > maxLength) {
      return new Parsed(null, "the Idempotency-Key is " + key.length()
          + " characters long, more than the " + maxLength + " accepted (maxKeyLength)");
    }
    return new Parsed(key, null);
  }

  private static @Nullable String sfString(String raw) {
    StringBuilder out = new StringBuilder();
    for (int i = 1; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '\\') {
        if (i + 1 >= raw.length()) {
          return null;
        }
        char next = raw.charAt(++i);
        if (next != '"' && next != '\\') {
          return null;
        }
        out.append(next);
      } else if (c == '"') {
        return i == raw.length() - 1 ? out.toString() : null;
      } else if (c < 0x20 || c > 0x7e) {
        return null;
      } else {
        out.append(c);
      }
    }
    return null; // no closing quote
  }
}
