package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.stream.StreamSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

class DeadLetterRecordTest {

  @Test
  void theCopyKeepsKeyValueAndRawHeadersAndAddsTheReason() {
    byte[] binary = {(byte) 0xFF, 0, 1};
    RecordHeaders original = new RecordHeaders();
    original.add("idempotency-key", "order-1".getBytes(StandardCharsets.UTF_8));
    original.add("x-binary", binary);
    original.add(DeadLetterReason.HEADER_CAUSE, "OLD".getBytes(StandardCharsets.UTF_8));
    original.add(DeadLetterReason.HEADER_EXCEPTION, "old.Exception".getBytes(StandardCharsets.UTF_8));
    original.add(KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET, "1".getBytes(StandardCharsets.UTF_8));
    byte[] key = {1, 2, 3};
    byte[] value = "{\"x\":1}".getBytes(StandardCharsets.UTF_8);
    ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(
        "orders", 1, 99L, 1234L, TimestampType.CREATE_TIME, 0, 0, key, value, original, Optional.empty());
    DeadLetterReason reason = new DeadLetterReason(DeadLetterCause.NO_KEY, "no key", "billing", null, 1, null);

    ProducerRecord<byte[], byte[]> copy = DeadLetterPublisher.deadLetterRecord("orders.DLT", record, reason);

    assertThat(copy.topic()).isEqualTo("orders.DLT");
    assertThat(copy.partition()).isNull();
    assertThat(copy.key()).isSameAs(key);
    assertThat(copy.value()).isSameAs(value);
    List<String> names = StreamSupport.stream(copy.headers().spliterator(), false).map(Header::key).toList();
    assertThat(names).containsExactly(
        "idempotency-key", "x-binary",
        DeadLetterReason.HEADER_CAUSE, DeadLetterReason.HEADER_DETAIL, DeadLetterReason.HEADER_CONSUMER_GROUP,
        DeadLetterReason.HEADER_ATTEMPT,
        KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC, KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION,
        KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET, KafkaIdempotentConsumer.HEADER_ORIGINAL_TIMESTAMP);
    assertThat(copy.headers().lastHeader("x-binary").value()).containsExactly(binary);
    assertThat(text(copy, DeadLetterReason.HEADER_CAUSE)).isEqualTo("NO_KEY");
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC)).isEqualTo("orders");
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION)).isEqualTo("1");
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET)).isEqualTo("99");
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_TIMESTAMP)).isEqualTo("1234");
  }

  private static String text(ProducerRecord<byte[], byte[]> record, String header) {
    return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
  }
}
