package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.spi.DecodedHeaders;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class JmsInboundMessageTest {

  @Test
  void stringPropertiesBecomeHeadersWithDashAliases() {
    Map<String, Object> props = new LinkedHashMap<>();
    props.put("idempotency_key", "order-1");
    props.put("ce_id", "42");
    props.put("plain", "p");
    props.put("JMSXGroupID", "grp");
    props.put("count", 3);
    props.put("flag", true);
    DecodedHeaders decoded = JmsInboundMessage.decodeHeaders(props);
    Map<String, String> headers = decoded.text();
    Set<String> undecodable = decoded.undecodable();

    assertThat(headers).containsOnly(
        Map.entry("idempotency_key", "order-1"), Map.entry("idempotency-key", "order-1"),
        Map.entry("ce_id", "42"), Map.entry("ce-id", "42"),
        Map.entry("plain", "p"), Map.entry("JMSXGroupID", "grp"));
    assertThat(undecodable).isEmpty();
  }

  @Test
  void unpairedSurrogatesAreUndecodableNotReplaced() {
    Map<String, Object> props = new LinkedHashMap<>();
    props.put("idempotency_key", "bad\uD800key");
    props.put("ok", "😀 pair");
    DecodedHeaders decoded = JmsInboundMessage.decodeHeaders(props);
    Map<String, String> headers = decoded.text();
    Set<String> undecodable = decoded.undecodable();

    assertThat(headers).containsOnlyKeys("ok");
    assertThat(undecodable).containsExactly("idempotency_key", "idempotency-key");
  }

  @Test
  void wellFormedness() {
    assertThat(JmsInboundMessage.isWellFormed("")).isTrue();
    assertThat(JmsInboundMessage.isWellFormed("日本 😀")).isTrue();
    assertThat(JmsInboundMessage.isWellFormed("\uDC00x")).isFalse();
    assertThat(JmsInboundMessage.isWellFormed("x\uD83D")).isFalse();
  }
}
