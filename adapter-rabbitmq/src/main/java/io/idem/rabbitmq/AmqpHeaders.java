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

  static DecodedHeaders decode(@Nullable Map<String, Object> headers) {
    if (headers == null || headers.isEmpty()) {
      return DecodedHeaders.empty();
    }
    DecodedHeaders.Builder decoded = DecodedHeaders.builder();
    headers.forEach((name, value) -> {
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
    return decoded.build();
  }
}
