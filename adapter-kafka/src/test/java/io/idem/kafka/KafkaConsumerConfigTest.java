package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;

class KafkaConsumerConfigTest {

  private static KafkaConsumerConfig.Builder valid() {
    return KafkaConsumerConfig.builder("localhost:9092", "orders");
  }

  @Test
  void defaultsAreTheDocumentedConstants() {
    KafkaConsumerConfig config = valid().build();

    assertThat(config.bootstrapServers()).isEqualTo("localhost:9092");
    assertThat(config.topics()).containsExactly("orders");
    assertThat(config.groupId()).isNull();
    assertThat(config.maxPollRecords()).isEqualTo(KafkaConsumerConfig.DEFAULT_MAX_POLL_RECORDS);
    assertThat(config.pollTimeout()).isEqualTo(KafkaConsumerConfig.DEFAULT_POLL_TIMEOUT);
    assertThat(config.commitInterval()).isEqualTo(KafkaConsumerConfig.DEFAULT_COMMIT_INTERVAL);
    assertThat(config.maxBatchSize()).isEqualTo(KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
    assertThat(config.shutdownTimeout()).isEqualTo(KafkaConsumerConfig.DEFAULT_SHUTDOWN_TIMEOUT);
    assertThat(config.deadLetterTopic("orders")).isEqualTo("orders.DLT");
    assertThat(config.maxPollInterval()).isEqualTo(Duration.ofMinutes(5));
  }

  @Test
  void maxBatchSizeIsAtLeastOne() {
    assertThat(valid().maxBatchSize(1).build().maxBatchSize()).isEqualTo(1);
    assertThat(valid().maxBatchSize(500).build().maxBatchSize()).isEqualTo(500);
    assertThatThrownBy(() -> valid().maxBatchSize(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatchSize must be >= 1, but was 0");
  }

  @Test
  void adapterOwnedConsumerSettingsAreForced() {
    Map<String, Object> props = valid().maxPollRecords(7).build().effectiveConsumerProperties("billing");

    assertThat(props)
        .containsEntry(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092")
        .containsEntry(ConsumerConfig.GROUP_ID_CONFIG, "billing")
        .containsEntry(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false)
        .containsEntry(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 7)
        .containsEntry(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")
        .containsEntry(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class)
        .containsEntry(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
  }

  @Test
  void isolationLevelDefaultsToReadCommittedAndTheUsersValueWins() {
    assertThat(valid().build().effectiveConsumerProperties("g"))
        .containsEntry(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")
        .containsEntry(ConsumerConfig.ISOLATION_LEVEL_CONFIG, KafkaConsumerConfig.DEFAULT_ISOLATION_LEVEL);

    KafkaConsumerConfig config = valid().consumerProperty("isolation.level", "read_uncommitted").build();
    assertThat(config.effectiveConsumerProperties("g"))
        .containsEntry(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
  }

  @Test
  void autoCommitTrueIsOverriddenToFalse() {
    KafkaConsumerConfig config = valid().consumerProperty("enable.auto.commit", "true").build();

    assertThat(config.effectiveConsumerProperties("g"))
        .containsEntry(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    assertThat(config.consumerProperties()).containsEntry(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
  }

  @Test
  void passThroughPropertiesReachTheClients() {
    KafkaConsumerConfig config = valid()
        .consumerProperty("auto.offset.reset", "latest")
        .consumerProperty("max.poll.interval.ms", "2000")
        .producerProperty("compression.type", "zstd")
        .producerProperty("delivery.timeout.ms", 5000)
        .build();

    assertThat(config.effectiveConsumerProperties("g")).containsEntry("auto.offset.reset", "latest");
    assertThat(config.maxPollInterval()).isEqualTo(Duration.ofSeconds(2));
    assertThat(config.effectiveProducerProperties("g"))
        .containsEntry("compression.type", "zstd")
        .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 5000)
        .containsEntry(ProducerConfig.ACKS_CONFIG, "all")
        .containsEntry(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
  }

  @Test
  void ownedConsumerPropertiesAreRefusedWithTheBuilderMethodToUse() {
    assertThatThrownBy(() -> valid().consumerProperty("group.id", "x").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("consumer property group.id is set by the adapter (use groupId(...)), but was given as 'x'");
    assertThatThrownBy(() -> valid().consumerProperty("max.poll.records", 500).build())
        .hasMessageContaining("maxPollRecords(...)");
    assertThatThrownBy(() -> valid().consumerProperty("value.deserializer", "x").build())
        .hasMessageContaining("value.deserializer");
  }

  @Test
  void weakerDeadLetterProducerSettingsAreRefused() {
    assertThatThrownBy(() -> valid().producerProperty("acks", "1").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("acks must be 'all'")
        .hasMessageEndingWith("but was '1'");
    assertThatThrownBy(() -> valid().producerProperty("enable.idempotence", false).build())
        .hasMessage("producer property enable.idempotence must be true, but was 'false'");
    assertThatThrownBy(() -> valid().producerProperty("transactional.id", "t").build())
        .hasMessageContaining("transactional.id");
    assertThat(valid().producerProperty("acks", "-1").build().producerProperties()).containsEntry("acks", "-1");
  }

  @Test
  void invalidValuesAreNamedWithTheirValue() {
    assertThatThrownBy(() -> valid().maxPollRecords(0).build())
        .hasMessage("maxPollRecords must be >= 1, but was 0");
    assertThatThrownBy(() -> valid().pollTimeout(Duration.ZERO).build())
        .hasMessage("pollTimeout must be positive, but was PT0S");
    assertThatThrownBy(() -> valid().commitInterval(Duration.ofSeconds(-1)).build())
        .hasMessage("commitInterval must not be negative, but was PT-1S");
    assertThatThrownBy(() -> valid().shutdownTimeout(Duration.ofMillis(-5)).build())
        .hasMessage("shutdownTimeout must be positive, but was PT-0.005S");
    assertThatThrownBy(() -> KafkaConsumerConfig.builder(" ", "orders").build())
        .hasMessage("bootstrapServers must not be blank, but was ' '");
    assertThatThrownBy(() -> KafkaConsumerConfig.builder("k:9092", List.of()).build())
        .hasMessage("topics must not be empty, but was []");
    assertThatThrownBy(() -> KafkaConsumerConfig.builder("k:9092", "a", "a").build())
        .hasMessage("topics must not repeat a topic, but was [a, a]");
    assertThatThrownBy(() -> KafkaConsumerConfig.builder("k:9092", "bad topic").build())
        .hasMessageStartingWith("topics must be legal Kafka topic names")
        .hasMessageEndingWith("but was 'bad topic'");
    assertThatThrownBy(() -> valid().groupId("  ").build())
        .hasMessage("groupId must not be blank, but was '  '");
    assertThatThrownBy(() -> valid().consumerProperty("max.poll.interval.ms", "soon").build())
        .hasMessage("consumer property max.poll.interval.ms must be a number of milliseconds, but was 'soon'");
  }

  @Test
  void deadLetterNamingIsAppliedPerTopicAndChecked() {
    KafkaConsumerConfig config = KafkaConsumerConfig.builder("k:9092", "a", "b")
        .deadLetterTopicNaming(topic -> "dlq-" + topic)
        .build();
    assertThat(config.deadLetterTopic("a")).isEqualTo("dlq-a");
    assertThat(config.deadLetterTopic("b")).isEqualTo("dlq-b");
    assertThatThrownBy(() -> config.deadLetterTopic("c"))
        .hasMessage("topic must be one of [a, b], but was 'c'");

    assertThatThrownBy(() -> KafkaConsumerConfig.builder("k:9092", "a", "b").deadLetterTopicNaming(t -> "b").build())
        .hasMessage("deadLetterTopicNaming(a) must not name a subscribed topic, but was 'b'");
    assertThatThrownBy(() -> valid().deadLetterTopicNaming(t -> t + "/dead").build())
        .hasMessageEndingWith("but was 'orders/dead'");
  }

  @Test
  void toStringHidesSecrets() {
    String text = valid()
        .consumerProperty("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter2\";")
        .producerProperty("ssl.key.password", "hunter2")
        .build()
        .toString();
    assertThat(text).doesNotContain("hunter2").contains("sasl.jaas.config=[hidden]");
  }

  @Test
  void theConfigIsACopy() {
    KafkaConsumerConfig.Builder builder = valid().consumerProperty("client.rack", "a");
    KafkaConsumerConfig config = builder.build();
    builder.consumerProperty("client.rack", "b");
    assertThat(config.consumerProperties()).containsEntry("client.rack", "a");
    assertThatThrownBy(() -> config.consumerProperties().put("x", "y"))
        .isInstanceOf(UnsupportedOperationException.class);
  }
}
