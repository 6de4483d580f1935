package io.idem.http.internal;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/** IMF-fixdate (RFC 9110 section 5.6.7), as containers format date headers. Stateless. */
final class HttpDates {
  private HttpDates() {}

  static String format(long epochMillis) {
    return DateTimeFormatter.RFC_1123_DATE_TIME.format(
        Instant.ofEpochMilli(epochMillis).atOffset(ZoneOffset.UTC));
  }
}
