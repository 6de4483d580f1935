package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;

/**
 * Client factories (for instrumented clients) receive the effective properties — auto-commit off
 * even when asked for, idempotent {@code acks=all} dead-letter producer — and the adapter works
 * with the clients they return.
 */
class ClientFactoriesGetTheEnforcedSettingsIT extends KafkaITSupport {

  @Test
  void factoriesSeeTheForcedSettingsAndTheirClientsAreUsed() {
    List<Map<String, Object>> consumerProps = new CopyOnWriteArrayList<>();
    List<Map<String, Object>> producerProps = new CopyOnWriteArrayList<>();
    KafkaConsumerConfig config = KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)
        .consumerProperty("enable.auto.commit", "true")
        .build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline(recording()),
        props -> {
          consumerProps.add(props);
          return new KafkaConsumer<>(props);
        },
        props -> {
          producerProps.add(props);
          return new KafkaProducer<>(props);
        });
    try {
      consumer.start();
      publish(0, "via-factory", "{}");
      await().atMost(TIMEOUT).until(() -> effects.count("via-factory") == 1 && committed(0) == 1);
    } finally {
      consumer.close();
    }

    assertThat(consumerProps).singleElement().satisfies(props -> assertThat(props)
        .containsEntry("enable.auto.commit", false)
        .containsEntry("isolation.level", "read_committed")
        .containsEntry("group.id", group));
    assertThat(producerProps).singleElement().satisfies(props -> assertThat(props)
        .containsEntry("acks", "all")
        .containsEntry("enable.idempotence", true));
  }
}
