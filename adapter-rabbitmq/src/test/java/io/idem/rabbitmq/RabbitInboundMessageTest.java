package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RabbitInboundMessageTest {
  private static final Envelope ENVELOPE = new Envelope(7, true, "", "orders");

  private static RabbitInboundMessage message(Map<String, Object> headers, String messageId) {
    AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
        .headers(headers).messageId(messageId).build();
    return new RabbitInboundMessage("orders", ENVELOPE, props,
        "{}".getBytes(StandardCharsets.UTF_8), 2, Instant.EPOCH);
  }

  @Test
  void headersAreStrictUtf8TextAndUndecodableOnesAreNamed() {
    Map<String, Object> headers = new LinkedHashMap<>();
    headers.put("idempotency-key", LongStringHelper.asLongString("order-1 ✓"));
    headers.put("plain", "text");
    headers.put("bad", LongStringHelper.asLongString(new byte[] {(byte) 0xC3, (byte) 0x28}));
    headers.put("count", 3);
    headers.put("flag", true);
    headers.put("at", Date.from(Instant.parse("2024-01-02T03:04:05Z")));
    headers.put("x-death", List.of(Map.of("reason", "rejected")));
    headers.put("nothing", null);
    RabbitInboundMessage message = message(headers, "m-1");

    assertThat(message.headers())
        .containsEntry("idempotency-key", "order-1 ✓")
        .containsEntry("plain", "text")
        .containsEntry("count", "3")
        .containsEntry("flag", "true")
        .containsEntry("at", "2024-01-02T03:04:05Z")
        .doesNotContainKeys("bad", "x-death", "nothing");
    assertThat(message.undecodableHeaders()).containsExactly("bad");
    assertThat(message.header("bad")).isNull();
  }

  @Test
  void theContentTypePropertyIsTheContentTypeHeader() {
    AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
        .headers(Map.of("content-type", "text/plain", "other", "x"))
        .contentType("application/cloudevents+json").build();
    RabbitInboundMessage message = new RabbitInboundMessage("orders", ENVELOPE, props,
        "{}".getBytes(StandardCharsets.UTF_8), 1, Instant.EPOCH);
    // the property, where AMQP and the CloudEvents AMQP binding put it, replaces a table entry
    assertThat(message.headers()).containsEntry("content-type", "application/cloudevents+json")
        .containsEntry("other", "x");
    assertThat(message(Map.of(), "m-1").headers()).doesNotContainKey("content-type");
  }

  @Test
  void brokerIdIsTheMessageIdPropertyNeverTheDeliveryTag() {
    assertThat(message(Map.of(), "m-1").brokerMessageId()).isEqualTo("m-1");
    assertThat(message(Map.of(), null).brokerMessageId()).isNull();
  }

  @Test
  void exposesTheDeliveryAndUnwrapsNativeTypes() {
    RabbitInboundMessage message = message(Map.of(), "m-1");
    assertThat(message.source()).isEqualTo("orders");
    assertThat(message.deliveryAttempt()).isEqualTo(2);
    assertThat(message.redelivered()).isTrue();
    assertThat(message.deliveryTag()).isEqualTo(7);
    assertThat(message.unwrap(Envelope.class)).containsSame(ENVELOPE);
    assertThat(message.unwrap(AMQP.BasicProperties.class)).containsSame(message.properties());
    assertThat(message.unwrap(Delivery.class)).get()
        .satisfies(d -> assertThat(d.getBody()).isSameAs(message.payload()));
    assertThat(message.unwrap(RabbitInboundMessage.class)).containsSame(message);
    assertThat(message.unwrap(String.class)).isEmpty();
  }

  @Test
  void aMissingKeyIsNamedAsAnAmqpHeader() {
    assertThat(((io.idem.KeyExtraction.Absent) io.idem.IdempotencyKeyExtractor.defaults().extract(message(Map.of(), "m-1")))
        .detail()).contains("no header 'idempotency-key'");
  }
}
