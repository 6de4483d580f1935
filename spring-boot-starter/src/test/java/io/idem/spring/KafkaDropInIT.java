package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.KafkaHeaders;

/**
 * {@code @Idempotent} on a {@code @KafkaListener} taking a {@code ConsumerRecord} ({@link
 * KafkaDropInApp}): the drop-in contract, Idem owning the retries past Spring's default error
 * handler (issue 24, case 1) with its retries inside the call, and the dead letter carrying Spring
 * Kafka's {@code kafka_dlt-*} headers beside Idem's ({@code idem.dead-letter.spring-kafka-headers}).
 */
class KafkaDropInIT extends KafkaOwnsRetriesContract {

  @Autowired ApplicationContext context;

  @Override
  String topic() {
    return RECORDS;
  }

  @Test
  void theDeadLetterCarriesSpringKafkasHeadersBesideIdems() {
    String key = "k-" + UUID.randomUUID();
    send(key, "poison 70");

    await().atMost(WAIT).until(() -> deadLetterRecords.records.containsKey(key));
    ConsumerRecord<String, String> copy = deadLetterRecords.records.get(key);
    assertThat(text(copy, KafkaHeaders.DLT_ORIGINAL_TOPIC)).isEqualTo(RECORDS);
    assertThat(ByteBuffer.wrap(copy.headers().lastHeader(KafkaHeaders.DLT_ORIGINAL_PARTITION).value()).getInt()).isZero();
    assertThat(ByteBuffer.wrap(copy.headers().lastHeader(KafkaHeaders.DLT_ORIGINAL_OFFSET).value()).getLong())
        .isEqualTo(Long.parseLong(text(copy, KafkaDeliveries.HEADER_ORIGINAL_OFFSET)));
    assertThat(text(copy, KafkaHeaders.DLT_EXCEPTION_FQCN)).isEqualTo(IllegalStateException.class.getName());
    assertThat(text(copy, KafkaHeaders.DLT_EXCEPTION_MESSAGE)).contains("MAX_ATTEMPTS_EXCEEDED").contains("injected failure");
    assertThat(text(copy, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP)).isEqualTo(RECORDS + "-billing");
    assertThat(text(copy, "idem-idempotency-key")).isEqualTo(key);
  }

  /**
   * Idem composes the container's rebalance listener with its own ({@code KafkaAssignments}, which
   * flags a freshly assigned partition's records): the application's keeps its callbacks.
   */
  @Test
  void theApplicationsRebalanceListenerKeepsItsCallbacks() {
    KafkaDropInApp.Rebalances rebalances = context.getBean(KafkaDropInApp.Rebalances.class);
    await().atMost(WAIT).until(() -> rebalances.assigned.contains(new TopicPartition(RECORDS, 0)));
    KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
    for (MessageListenerContainer container : registry.getAllListenerContainers()) {
      String topics = String.join(",", container.getContainerProperties().getTopics());
      Object listener = container.getContainerProperties().getConsumerRebalanceListener();
      if (topics.equals(RECORDS)) {
        assertThat(listener).isInstanceOf(KafkaAssignments.class);
        assertThat(((KafkaAssignments) listener).delegate()).isSameAs(rebalances);
      } else if (topics.equals(RECEIPTS)) {
        assertThat(listener).as("a container without @Idempotent methods is not Idem's").isSameAs(rebalances);
      }
    }
  }

  private static String text(ConsumerRecord<String, String> record, String header) {
    return new String(record.headers().lastHeader(header).value(), StandardCharsets.UTF_8);
  }
}
