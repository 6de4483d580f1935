package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.deadletters.DeadLetterHeaders;
import io.idem.deadletters.KafkaDeadLetters;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.DeadLetterDecision;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code /actuator/idem-dead-letters} in a small application context on real PostgreSQL and the
 * in-JVM Kafka broker: absent unless enabled; lists an application's dead-letter topic grouped;
 * a replay releases the key's decision in the store, republishes the record to its source and
 * leaves nothing to list; a selection is required.
 */
class IdemDeadLettersEndpointIT {
  private static final String SCHEMA = "spring_dead_letters_" + Long.toHexString(System.nanoTime());
  private static final String TOPIC = "idem-spring-dlt-" + Long.toHexString(System.nanoTime());
  private static final String DLT = TOPIC + ".DLT";

  @BeforeAll
  static void setUp() {
    PostgresFixture.shared().createSchema(SCHEMA);
    KafkaFixture.shared().createTopic(TOPIC, 1);
    KafkaFixture.shared().createTopic(DLT, 1);
  }

  @AfterAll
  static void tearDown() {
    KafkaFixture.shared().deleteTopic(TOPIC);
    KafkaFixture.shared().deleteTopic(DLT);
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withPropertyValues("idem.retention.enabled=false")
      .withBean(DataSource.class, () -> PostgresFixture.shared().dataSource(SCHEMA, 4))
      .withConfiguration(BootLines.autoConfigurations(BootLines.DATA_SOURCE,
          BootLines.DATA_SOURCE_TRANSACTION_MANAGER, BootLines.TRANSACTION))
      .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class,
          IdemDeadLettersEndpointAutoConfiguration.class))
      .withBean(DeadLetterDestination.class, () -> KafkaDeadLetters.builder(
          KafkaFixture.shared().bootstrapServers(), DLT).groupId("idem-spring-endpoint-" + TOPIC).build());

  @Test
  void theEndpointIsOffByDefault() {
    runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdemDeadLettersEndpoint.class));
  }

  @Test
  void itListsTheDeadLettersAndReplaysThemThroughTheStore() {
    runner.withPropertyValues("idem.dead-letters.endpoint.enabled=true",
        "idem.dead-letters.endpoint.create-actions-table=true").run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(IdemDeadLettersEndpoint.class);
          IdemDeadLettersEndpoint endpoint = context.getBean(IdemDeadLettersEndpoint.class);
          SpringTransactionStore store = context.getBean(SpringTransactionStore.class);
          IdempotencyKey key = new IdempotencyKey("billing", "order-7", KeySource.HEADER);
          DeadLetterReason reason = new DeadLetterReason(DeadLetterCause.NON_RETRYABLE, "card declined", "billing",
              "order-7", 1, "io.idem.NonRetryableException");
          assertThat(store.delegate().recordDeadLetter(key, DeadLetterDecision.of(reason, TOPIC + "-0@0"))).isTrue();
          deadLetter(reason);

          Map<String, Object> listed = endpoint.list();
          assertThat(listed.toString()).contains(DLT, "total=1", "NON_RETRYABLE", "billing");
          Map<String, Object> one = endpoint.destination(DLT);
          assertThat(one).isNotNull();
          assertThat(one.toString()).contains("order-7", "card declined");
          assertThat(endpoint.destination("no-such-topic")).isNull();
          assertThatThrownBy(() -> endpoint.replay(DLT, null, null, null, null, null, null, null))
              .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("criterion");

          Map<String, Object> dry = endpoint.replay(DLT, null, null, "NON_RETRYABLE", null, true, null, null);
          assertThat(dry.toString()).contains("WOULD_REPLAY=1");
          assertThat(store.delegate().deadLetterDecision(key)).as("a dry run touches nothing").isNotNull();

          Map<String, Object> replayed = endpoint.replay(DLT, null, null, null, true, null, null, null);
          assertThat(replayed.toString()).contains("REPLAYED=1", "decision released");
          assertThat(store.delegate().deadLetterDecision(key)).isNull();
          List<ConsumerRecord<byte[], byte[]>> copies = readAll(TOPIC);
          assertThat(copies).singleElement().satisfies(copy -> {
            assertThat(new String(copy.value(), StandardCharsets.UTF_8)).isEqualTo("{\"orderId\":\"order-7\"}");
            assertThat(new String(copy.headers().lastHeader(DeadLetterHeaders.REPLAY_COUNT).value(),
                StandardCharsets.UTF_8)).isEqualTo("1");
            assertThat(copy.headers().lastHeader(DeadLetterReason.HEADER_CAUSE)).isNull();
          });
          assertThat(endpoint.list().toString()).contains("total=0");
        });
  }

  /** The dead letter idem-kafka stores for {@code reason}: the original plus the reason and provenance. */
  private static void deadLetter(DeadLetterReason reason) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.shared().bootstrapServers());
    RecordHeaders headers = new RecordHeaders();
    headers.add("idempotency-key", "order-7".getBytes(StandardCharsets.UTF_8));
    reason.toHeaders().forEach((k, v) -> headers.add(k, v.getBytes(StandardCharsets.UTF_8)));
    headers.add(DeadLetterHeaders.ORIGINAL_TOPIC, TOPIC.getBytes(StandardCharsets.UTF_8));
    headers.add(DeadLetterHeaders.ORIGINAL_PARTITION, "0".getBytes(StandardCharsets.UTF_8));
    headers.add(DeadLetterHeaders.ORIGINAL_OFFSET, "0".getBytes(StandardCharsets.UTF_8));
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.send(new ProducerRecord<>(DLT, null, "order-7".getBytes(StandardCharsets.UTF_8),
          "{\"orderId\":\"order-7\"}".getBytes(StandardCharsets.UTF_8), headers)).get();
    }
  }

  private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.shared().bootstrapServers());
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      var partitions = List.of(new org.apache.kafka.common.TopicPartition(topic, 0));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      long end = consumer.endOffsets(partitions).values().iterator().next();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (consumer.position(partitions.get(0)) < end && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(out::add);
      }
    }
    return out;
  }
}
