package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKeyExtractor;
import io.idem.KeyExtraction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

class KafkaInboundMessageTest {
  private static final Instant NOW = Instant.parse("2024-05-01T10:00:00Z");

  private static ConsumerRecord<byte[], byte[]> record(RecordHeaders headers, byte[] key, byte[] value) {
    return new ConsumerRecord<>("orders", 2, 41L, 1L, TimestampType.CREATE_TIME, 0, 0, key, value, headers, Optional.of(3));
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void validUtf8HeadersAreDecodedAndOthersListedAsUndecodable() {
    RecordHeaders headers = new RecordHeaders();
    headers.add("idempotency-key", utf8("order-7"));
    headers.add("x-unicode", utf8("Zoë ✓ 日本 🎉"));
    headers.add("x-empty", new byte[0]);
    headers.add("x-latin1", new byte[] {'c', 'a', 'f', (byte) 0xE9}); // "café" in ISO-8859-1
    headers.add("x-overlong", new byte[] {(byte) 0xC0, (byte) 0xAF}); // overlong '/', invalid UTF-8
    headers.add("x-surrogate", new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}); // lone surrogate

    KafkaInboundMessage message = KafkaInboundMessage.of(record(headers, null, utf8("{}")), 1, NOW);

    assertThat(message.headers())
        .containsOnlyKeys("idempotency-key", "x-unicode", "x-empty")
        .containsEntry("x-unicode", "Zoë ✓ 日本 🎉")
        .containsEntry("x-empty", "");
    assertThat(message.undecodableHeaders()).containsExactlyInAnyOrder("x-latin1", "x-overlong", "x-surrogate");
    assertThat(message.header("x-latin1")).isNull();
  }

  @Test
  void aKeyHeaderThatIsNotUtf8IsRejectedNotReplaced() {
    RecordHeaders headers = new RecordHeaders();
    headers.add("idempotency-key", new byte[] {'k', (byte) 0xFF});

    KafkaInboundMessage message = KafkaInboundMessage.of(record(headers, null, utf8("{}")), 1, NOW);

    assertThat(IdempotencyKeyExtractor.defaults().extract(message)).isInstanceOf(KeyExtraction.Rejected.class);
  }

  @Test
  void theLastValueOfARepeatedHeaderWins() {
    RecordHeaders headers = new RecordHeaders();
    headers.add("h", utf8("first"));
    headers.add("h", utf8("second"));
    headers.add("u", new byte[] {(byte) 0xFF});
    headers.add("u", utf8("now valid"));
    headers.add("v", utf8("valid"));
    headers.add("v", new byte[] {(byte) 0xFF});
    headers.add("n", utf8("present"));
    headers.add("n", null);

    KafkaInboundMessage message = KafkaInboundMessage.of(record(headers, null, utf8("{}")), 1, NOW);

    assertThat(message.headers()).containsEntry("h", "second").containsEntry("u", "now valid");
    assertThat(message.headers()).doesNotContainKeys("v", "n");
    assertThat(message.undecodableHeaders()).containsExactly("v");
  }

  @Test
  void recordFieldsAreExposed() {
    byte[] value = {0, 1, 2, (byte) 0xFF};
    ConsumerRecord<byte[], byte[]> record = record(new RecordHeaders(), utf8("k"), value);

    KafkaInboundMessage message = KafkaInboundMessage.of(record, 3, NOW);

    assertThat(message.source()).isEqualTo("orders");
    assertThat(message.brokerMessageId()).isEqualTo("orders-2@41");
    assertThat(message.payload()).isSameAs(value);
    assertThat(message.key()).containsExactly('k');
    assertThat(message.partition()).isEqualTo(2);
    assertThat(message.offset()).isEqualTo(41L);
    assertThat(message.deliveryAttempt()).isEqualTo(3);
    assertThat(message.receivedAt()).isEqualTo(NOW);
    assertThat(message.unwrap(ConsumerRecord.class)).containsSame(record);
    assertThat(message.unwrap(String.class)).isEmpty();
    assertThat(message.toString()).contains("orders-2@41", "attempt=3", "4 bytes");
  }

  @Test
  void aTombstoneHasAnEmptyPayload() {
    KafkaInboundMessage message = KafkaInboundMessage.of(record(new RecordHeaders(), utf8("k"), null), 1, NOW);
    assertThat(message.payload()).isEmpty();
  }

  @Test
  void attemptsStartAtOne() {
    assertThatThrownBy(() -> KafkaInboundMessage.of(record(new RecordHeaders(), null, null), 0, NOW))
        .hasMessage("deliveryAttempt must be >= 1, but was 0");
  }

  @Test
  void aMissingKeyIsNamedAsAKafkaHeader() {
    KafkaInboundMessage message = KafkaInboundMessage.of(record(new RecordHeaders(), null, utf8("{}")), 1, NOW);

    assertThat(((KeyExtraction.Absent) IdempotencyKeyExtractor.defaults().extract(message)).detail())
        .contains("no header 'idempotency-key'");
  }

  @Test
  void anUnaccountedRedeliveryIsFlaggedOnlyWhenTheAdapterSaysSo() {
    ConsumerRecord<byte[], byte[]> record = record(new RecordHeaders(), null, utf8("{}"));

    assertThat(KafkaInboundMessage.of(record, 1, NOW).unaccountedRedelivery()).isFalse();
    KafkaInboundMessage flagged = KafkaInboundMessage.of(record, 1, true, NOW);
    assertThat(flagged.unaccountedRedelivery()).isTrue();
    assertThat(flagged.deliveryAttempt()).isEqualTo(1);
    assertThat(flagged.toString()).contains("unaccountedRedelivery");
  }
}
