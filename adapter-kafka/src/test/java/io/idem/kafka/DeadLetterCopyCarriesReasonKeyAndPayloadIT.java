package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A dead-lettered record is copied to {@code <topic>.DLT} with its original key, payload and raw
 * headers plus the reason and provenance headers, and its offset advances only once the broker
 * acknowledged the copy.
 */
class DeadLetterCopyCarriesReasonKeyAndPayloadIT extends KafkaITSupport {

  @Test
  void theDeadLetterCopyCarriesTheReasonTheOriginalKeyPayloadAndHeaders() throws Exception {
    byte[] key = {0, (byte) 0xFF, 42};
    byte[] payload = "{\"poison\":true}".getBytes(StandardCharsets.UTF_8);
    byte[] binaryHeader = {(byte) 0xC3, (byte) 0x28};
    RecordHeaders headers = new RecordHeaders();
    headers.add(KEY, "poison-7".getBytes(StandardCharsets.UTF_8));
    headers.add("x-binary", binaryHeader);
    headers.add("x-trace", "abc".getBytes(StandardCharsets.UTF_8));
    KafkaTestClients.send(producer, new ProducerRecord<>(topic, 0, key, payload, headers));
    start((message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      throw new NonRetryableException("cannot apply poison-7");
    }, b -> b);

    await("dead letter").atMost(TIMEOUT).until(() -> !KafkaTestClients.readAll(deadLetterTopic).isEmpty());
    await("offset advanced").atMost(TIMEOUT).until(() -> committed(0) == 1);
    List<ConsumerRecord<byte[], byte[]>> dead = KafkaTestClients.readAll(deadLetterTopic);
    assertThat(dead).hasSize(1);
    ConsumerRecord<byte[], byte[]> copy = dead.get(0);
    assertThat(copy.key()).containsExactly(key);
    assertThat(copy.value()).containsExactly(payload);
    assertThat(copy.headers().lastHeader("x-binary").value()).containsExactly(binaryHeader);
    assertThat(text(copy, "x-trace")).isEqualTo("abc");
    assertThat(text(copy, KEY)).isEqualTo("poison-7");
    assertThat(text(copy, DeadLetterReason.HEADER_CAUSE)).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
    assertThat(text(copy, DeadLetterReason.HEADER_DETAIL)).contains("cannot apply poison-7");
    assertThat(text(copy, DeadLetterReason.HEADER_CONSUMER_GROUP)).isEqualTo(group);
    assertThat(text(copy, DeadLetterReason.HEADER_KEY)).isEqualTo("poison-7");
    assertThat(text(copy, DeadLetterReason.HEADER_ATTEMPT)).isEqualTo("1");
    assertThat(text(copy, DeadLetterReason.HEADER_EXCEPTION)).isEqualTo(NonRetryableException.class.getName());
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC)).isEqualTo(topic);
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION)).isEqualTo("0");
    assertThat(text(copy, KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET)).isEqualTo("0");
    assertThat(effects.count("poison-7")).isZero();
    assertThat(outcomes.count("poison-7", ProcessingOutcome.DEAD_LETTERED)).isEqualTo(1);
  }

  @Test
  void aFailedDeadLetterSendLeavesTheOffsetAndIsRetriedLater() throws Exception {
    // The dead-letter topic refuses records over 200 bytes: a real broker-side send failure.
    KafkaTestClients.kafka().deleteTopic(deadLetterTopic);
    await().atMost(TIMEOUT).untilAsserted(() ->
        KafkaTestClients.kafka().createTopic(deadLetterTopic, 1, Map.of("max.message.bytes", "200")));
    byte[] big = new byte[1000];
    java.util.Arrays.fill(big, (byte) 'x');
    RecordHeaders headers = new RecordHeaders();
    headers.add(KEY, "too-big-1".getBytes(StandardCharsets.UTF_8));
    KafkaTestClients.send(producer, new ProducerRecord<byte[], byte[]>(topic, 0, (byte[]) null, big, headers));
    AtomicInteger handled = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    IdempotencyListener refusals = new IdempotencyListener() {
      @Override
      public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
        refused.incrementAndGet();
      }
    };
    start(pipeline((message, session) -> {
      handled.incrementAndGet();
      throw new NonRetryableException("never applies");
    }, refusals), b -> b);

    await("several refused dead-letter sends").atMost(TIMEOUT).until(() -> refused.get() >= 3);
    // the decision recorded before the first send: later tries store the copy without the handler
    assertThat(handled).hasValue(1);
    // nothing past the record: only the consumer's mark at assignment (its offset, 0) is committed
    assertThat(committed(0)).isZero();
    assertThat(outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isZero();

    ConfigResource dlt = new ConfigResource(ConfigResource.Type.TOPIC, deadLetterTopic);
    KafkaTestClients.admin().incrementalAlterConfigs(Map.of(dlt, List.of(new AlterConfigOp(
        new ConfigEntry("max.message.bytes", "1048588"), AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);

    await("dead-lettered once the topic accepts it").atMost(TIMEOUT).until(() -> committed(0) == 1);
    List<ConsumerRecord<byte[], byte[]>> dead = KafkaTestClients.readAll(deadLetterTopic);
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).value()).containsExactly(big);
    assertThat(outcomes.count("too-big-1", ProcessingOutcome.DEAD_LETTERED)).isEqualTo(1);
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .until(() -> KafkaTestClients.readAll(deadLetterTopic).size() == 1);
  }

  private static String text(ConsumerRecord<byte[], byte[]> record, String header) {
    return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
  }
}
