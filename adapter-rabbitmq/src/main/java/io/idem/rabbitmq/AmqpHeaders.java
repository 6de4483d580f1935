package io.idem.rabbitmq;

import com.rabbitmq.client.LongString;
import io.idem.spi.Utf8;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** AMQP header tables as UTF-8 text: the decoding rules of {@link RabbitInboundMessage#headers()}. */
final class AmqpHeaders {
  final Map<String, String> text;
  final Set<String> undecodable;

  private AmqpHeaders(Map<String, String> text, Set<String> undecodable) {
    this.text = text;
    this.undecodable = undecodable;
  }

  static AmqpHeaders decode(@Nullable Map<String, Object> headers) {
    if (headers == null || headers.isEmpty()) {
      return new AmqpHeaders(Map.of(), Set.of());
    }
    Map<String, String> text = new LinkedHashMap<>();
    Set<String> undecodable = new LinkedHashSet<>();
    headers.forEach((name, value) -> {
      if (value == null || value instanceof List<?> || value instanceof Map<?, ?>) {
        return; // void, arrays and tables (x-death, …) are structure, not text
      }
      byte[] bytes = value instanceof LongString s ? s.getBytes()
          : value instanceof byte[] b ? b
          : null;
      if (bytes != null) {
        String decoded = Utf8.decodeStrict(bytes);
        if (decoded == null) {
          undecodable.add(name);
        } else {
          text.put(name, decoded);
        }
      } else if (value instanceof Date date) {
        text.put(name, date.toInstant().toString());
      } else {
        text.put(name, value.toString()); // String, numbers, booleans
      }
    });
    return new AmqpHeaders(
        Collections.unmodifiableMap(text), Collections.unmodifiableSet(undecodable));
  }

}
