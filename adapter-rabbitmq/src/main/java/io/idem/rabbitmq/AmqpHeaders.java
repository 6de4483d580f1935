package io.idem.rabbitmq;

import com.rabbitmq.client.LongString;
import io.idem.spi.DecodedHeaders;
import java.util.Date;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * AMQP header tables as {@link DecodedHeaders}: the rules of {@link RabbitInboundMessage#headers()}.
 * Only the AMQP types are mapped here; decoding (strict UTF-8, undecodable listed) is
 * {@link DecodedHeaders.Builder}'s.
 */
final class AmqpHeaders {
  private AmqpHeaders() {}

  /** The name the AMQP {@code content-type} property appears under in the headers: {@value}. */
  static final String CONTENT_TYPE = "content-type";

  static DecodedHeaders decode(@Nullable Map<String, Object> headers) {
    return decode(headers, null);
  }

  /**
   * The headers table and, under {@value #CONTENT_TYPE}, the AMQP {@code content-type} property
   * (it replaces a table entry of that name: the property is where AMQP and the CloudEvents AMQP
   * binding carry the content type).
   */
  static DecodedHeaders decode(@Nullable Map<String, Object> headers, @Nullable String contentType) {
    if ((headers == null || headers.isEmpty()) && contentType == null) {
      return DecodedHeaders.empty();
    }
    DecodedHeaders.Builder decoded = DecodedHeaders.builder();
    (headers == null ? Map.<String, Object>of() : headers).forEach((name, value) -> {
      if (value == null || value instanceof List<?> || value instanceof Map<?, ?>) {
        return; // void, arrays and tables (x-death, …) are structure, not text
      }
      if (value instanceof LongString s) {
        decoded.bytes(name, s.getBytes());
      } else if (value instanceof byte[] b) {
        decoded.bytes(name, b);
      } else if (value instanceof Date date) {
        decoded.text(name, date.toInstant().toString());
      } else {
        decoded.text(name, value.toString()); // String, numbers, booleans
      }
    });
    if (contentType != null) {
      decoded.text(CONTENT_TYPE, contentType);
    }
    return decoded.build();
  }
}
