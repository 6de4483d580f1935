package io.idem.kafka;

import io.idem.InboundMessage;
import io.idem.spi.DecodedHeaders;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.jspecify.annotations.Nullable;

/**
 * One Kafka {@link ConsumerRecord} as an {@link InboundMessage}. Immutable and thread-safe (it
 * shares the record's payload array; callers must not modify it).
 *
 * <ul>
 *   <li>{@link #source()} is the topic; {@link #brokerMessageId()} is
 *       {@code <topic>-<partition>@<offset>}, unique within a cluster as long as the topic exists.
 *   <li>{@link #headers()}: Kafka headers whose value is valid UTF-8, decoded strictly by
 *       {@link DecodedHeaders} (malformed input is reported, never replaced with U+FFFD). Kafka
 *       allows a header name more than once; the last value wins, as in
 *       {@link Headers#lastHeader(String)}. A header whose last value
 *       is not UTF-8 is listed in {@link #undecodableHeaders()} instead; a header whose last value
 *       is {@code null} is left out of both.
 *   <li>{@link #payload()} is the record value, or an empty array for a {@code null} value
 *       (tombstone).
 *   <li>{@link #deliveryAttempt()} is counted by the adapter per partition and offset, in memory,
 *       because Kafka keeps no delivery count: it restarts at 1 when the partition is revoked or
 *       lost and assigned again (with the default eager assignor, every rebalance does that, even
 *       one that gives the partition back to the same consumer) or the consumer restarts. A
 *       record that keeps failing can therefore run up to {@code maxAttempts} times per owner;
 *       see {@link KafkaIdempotentConsumer} ("Delivery attempts") for the worst case.
 *   <li>{@link #unaccountedRedelivery()} is true for the records of a partition's redelivery
 *       window: after an assignment that was not a clean handover, the records from the committed
 *       offset on that a previous owner may have had in a handler when it died (see {@link
 *       KafkaIdempotentConsumer}, "Process deaths"); the pipeline then counts the attempt in the
 *       store before the handler runs.
 *   <li>{@link #unwrap(Class)} with {@code ConsumerRecord.class} returns the record.
 * </ul>
 */
public final class KafkaInboundMessage implements InboundMessage {
  private static final byte[] EMPTY = new byte[0];

  private final ConsumerRecord<byte[], byte[]> record;
  private final Map<String, String> headers;
  private final Set<String> undecodable;
  private final int deliveryAttempt;
  private final boolean unaccountedRedelivery;
  private final Instant receivedAt;

  private KafkaInboundMessage(
      ConsumerRecord<byte[], byte[]> record,
      Map<String, String> headers,
      Set<String> undecodable,
      int deliveryAttempt,
      boolean unaccountedRedelivery,
      Instant receivedAt) {
    this.record = record;
    this.headers = headers;
    this.undecodable = undecodable;
    this.deliveryAttempt = deliveryAttempt;
    this.unaccountedRedelivery = unaccountedRedelivery;
    this.receivedAt = receivedAt;
  }

  /**
   * Wraps a record; decodes its headers once.
   *
   * @param deliveryAttempt 1-based
   * @throws IllegalArgumentException if {@code deliveryAttempt < 1}
   */
  public static KafkaInboundMessage of(
      ConsumerRecord<byte[], byte[]> record, int deliveryAttempt, Instant receivedAt) {
    return of(record, deliveryAttempt, false, receivedAt);
  }

  /**
   * Wraps a record; decodes its headers once.
   *
   * @param deliveryAttempt 1-based
   * @param unaccountedRedelivery {@link #unaccountedRedelivery()}
   * @throws IllegalArgumentException if {@code deliveryAttempt < 1}
   */
  public static KafkaInboundMessage of(ConsumerRecord<byte[], byte[]> record, int deliveryAttempt,
      boolean unaccountedRedelivery, Instant receivedAt) {
    Objects.requireNonNull(record, "record");
    Objects.requireNonNull(receivedAt, "receivedAt");
    if (deliveryAttempt < 1) {
      throw new IllegalArgumentException("deliveryAttempt must be >= 1, but was " + deliveryAttempt);
    }
    DecodedHeaders.Builder headers = DecodedHeaders.builder();
    for (Header header : record.headers()) {
      headers.bytes(header.key(), header.value());
    }
    DecodedHeaders decoded = headers.build();
    return new KafkaInboundMessage(record, decoded.text(), decoded.undecodable(), deliveryAttempt,
        unaccountedRedelivery, receivedAt);
  }

  /** {@code <topic>-<partition>@<offset>}, the form used by {@link #brokerMessageId()}. */
  static String brokerId(String topic, int partition, long offset) {
    return topic + "-" + partition + "@" + offset;
  }

  @Override
  public String source() {
    return record.topic();
  }

  @Override
  public Map<String, String> headers() {
    return headers;
  }

  @Override
  public Set<String> undecodableHeaders() {
    return undecodable;
  }

  @Override
  public byte[] payload() {
    byte[] value = record.value();
    return value == null ? EMPTY : value;
  }

  @Override
  public String brokerMessageId() {
    return brokerId(record.topic(), record.partition(), record.offset());
  }

  @Override
  public int deliveryAttempt() {
    return deliveryAttempt;
  }

  @Override
  public boolean unaccountedRedelivery() {
    return unaccountedRedelivery;
  }

  @Override
  public Instant receivedAt() {
    return receivedAt;
  }

  /** The record's partition. */
  public int partition() {
    return record.partition();
  }

  /** The record's offset in its partition. */
  public long offset() {
    return record.offset();
  }

  /** The record's topic and partition. */
  public TopicPartition topicPartition() {
    return new TopicPartition(record.topic(), record.partition());
  }

  /** The record key's bytes, or {@code null} when the record has no key. Shared, not copied. */
  public byte @Nullable [] key() {
    return record.key();
  }

  /** The native record. */
  public ConsumerRecord<byte[], byte[]> record() {
    return record;
  }

  @Override
  public <T> Optional<T> unwrap(Class<T> type) {
    return type.isInstance(record) ? Optional.of(type.cast(record)) : Optional.empty();
  }

  @Override
  public String toString() {
    return "KafkaInboundMessage[" + brokerMessageId() + ", attempt=" + deliveryAttempt
        + (unaccountedRedelivery ? ", unaccountedRedelivery" : "") + ", headers=" + headers.keySet() + ", payload=" + payload().length + " bytes]";
  }
}
