package io.idem.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.idem.DeadLetterReason;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.spring.IdemListenerFactory;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The shop as it is, started by Spring Boot against the fixtures' Kafka and RabbitMQ and a fresh
 * PostgreSQL schema (its Flyway migrations, then Idem's): per broker, a message delivered twice is
 * applied once and skipped the second time, and one that cannot be handled is retried and then
 * dead-lettered with Idem's reason headers. Only the addresses, the names and the backoff are
 * overridden; what Idem decided is read from a recording listener added by this test. The context
 * is closed after the class, so that its consumers stop before the topics and queues go.
 */
@SpringBootTest(properties = {"idem.retry.initial-backoff=10ms", "spring.main.banner-mode=off"})
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class ShopApplicationIT {
  private static final String RUN = UUID.randomUUID().toString().substring(0, 8);
  private static final String TOPIC = "shop-orders-" + RUN;
  private static final String QUEUE = "shop-payments-" + RUN;
  private static final String SCHEMA = "shop_" + RUN;
  /** For a Spring Boot application on a loaded 2-core machine. */
  private static final Duration WAIT = Duration.ofSeconds(45);

  @DynamicPropertySource
  static void servers(DynamicPropertyRegistry registry) {
    PostgresFixture postgres = PostgresFixture.shared();
    postgres.createSchema(SCHEMA);
    registry.add("spring.datasource.url", postgres::jdbcUrl);
    registry.add("spring.datasource.username", postgres::user);
    registry.add("spring.datasource.password", postgres::password);
    registry.add("spring.datasource.hikari.schema", () -> SCHEMA);
    registry.add("spring.flyway.schemas", () -> SCHEMA);
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(TOPIC, 1);
    kafka.createTopic(TOPIC + ".DLT", 1);
    registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    registry.add("idem.consumers.orders.source", () -> TOPIC);
    registry.add("idem.consumers.payments.source", () -> QUEUE);
    registry.add("idem.consumers.payments.uri", RabbitFixture.shared()::uri);
  }

  @Autowired JdbcTemplate jdbc;
  @Autowired OutcomeRecorder recorder;

  /** What Idem decided for {@code key}, in order. */
  private List<ProcessingOutcome> outcomes(String key) {
    return recorder.settled().stream().filter(s -> key.equals(s.key())).map(OutcomeRecorder.Settled::outcome).toList();
  }

  @Test
  void anOrderDeliveredTwiceIsRecordedOnceAndAnUnreadableOneIsDeadLettered() throws Exception {
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(
        Map.of("bootstrap.servers", KafkaFixture.shared().bootstrapServers()),
        new StringSerializer(), new StringSerializer())) {
      for (String[] order : List.of(new String[] {"o-1", "4200"}, new String[] {"o-1", "4200"},
          new String[] {"o-2", "forty-two"})) {
        ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, order[0], order[1]);
        record.headers().add("idempotency-key", order[0].getBytes(StandardCharsets.UTF_8));
        producer.send(record).get(30, TimeUnit.SECONDS);
      }
    }

    await("o-1 twice").atMost(WAIT).until(() -> outcomes("o-1").size() == 2);
    assertThat(outcomes("o-1")).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(jdbc.queryForObject("SELECT amount_cents FROM orders WHERE id = 'o-1'", Long.class)).isEqualTo(4200);

    Map<String, String> deadLetter = kafkaDeadLetter("o-2");
    assertThat(outcomes("o-2")).endsWith(ProcessingOutcome.DEAD_LETTERED);
    assertThat(deadLetter).containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3");
    assertThat(deadLetter.get(DeadLetterReason.HEADER_DETAIL)).contains("forty-two");
    assertThat(jdbc.queryForObject("SELECT count(*) FROM orders WHERE id = 'o-2'", Long.class)).isZero();
  }

  @Test
  void aPaymentDeliveredTwiceIsBookedOnceAndAnUnreadableOneIsDeadLettered() throws Exception {
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("shop-it");
        Channel channel = connection.createChannel()) {
      channel.confirmSelect();
      for (String[] payment : List.of(new String[] {"p-1", "o-7 500"}, new String[] {"p-1", "o-7 500"},
          new String[] {"p-2", "o-7 five hundred"})) {
        channel.basicPublish("", QUEUE, new AMQP.BasicProperties.Builder()
            .messageId(UUID.randomUUID().toString())
            .headers(Map.<String, Object>of("idempotency-key", payment[0]))
            .build(), payment[1].getBytes(StandardCharsets.UTF_8));
      }
      channel.waitForConfirmsOrDie(30_000);

      await("p-1 twice").atMost(WAIT).until(() -> outcomes("p-1").size() == 2);
      assertThat(outcomes("p-1")).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
      assertThat(jdbc.queryForObject("SELECT paid_cents FROM balances WHERE order_id = 'o-7'", Long.class))
          .isEqualTo(500);

      GetResponse[] deadLetter = new GetResponse[1];
      await("p-2 in " + QUEUE + ".dlq").atMost(WAIT)
          .until(() -> (deadLetter[0] = channel.basicGet(QUEUE + ".dlq", true)) != null);
      assertThat(outcomes("p-2")).endsWith(ProcessingOutcome.DEAD_LETTERED);
      Map<String, Object> headers = deadLetter[0].getProps().getHeaders();
      assertThat(String.valueOf(headers.get(DeadLetterReason.HEADER_KEY))).isEqualTo("p-2");
      assertThat(String.valueOf(headers.get(DeadLetterReason.HEADER_ATTEMPT))).isEqualTo("3");
      assertThat(jdbc.queryForObject("SELECT count(*) FROM payments WHERE id = 'p-2'", Long.class)).isZero();
    }
  }

  /** The headers of the dead letter of {@code key} in the orders' dead-letter topic, waited for. */
  private static Map<String, String> kafkaDeadLetter(String key) {
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
        "bootstrap.servers", KafkaFixture.shared().bootstrapServers(),
        "group.id", "shop-it-" + RUN, "auto.offset.reset", "earliest"),
        new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(TOPIC + ".DLT"));
      List<ConsumerRecord<String, String>> seen = new ArrayList<>();
      await(key + " in " + TOPIC + ".DLT").atMost(WAIT).until(() -> {
        consumer.poll(Duration.ofMillis(200)).forEach(seen::add);
        return seen.stream().anyMatch(r -> key.equals(r.key()));
      });
      Map<String, String> headers = new ConcurrentHashMap<>();
      ConsumerRecord<String, String> record = seen.stream().filter(r -> key.equals(r.key())).findFirst().orElseThrow();
      for (Header header : record.headers()) {
        headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
      }
      return headers;
    } finally {
      KafkaFixture.shared().deleteConsumerGroup("shop-it-" + RUN);
    }
  }

  /**
   * Records what Idem decided per key, in both consumers' pipelines; deletes the topics, queues
   * and exchange when the context closes, after the consumers stopped (lifecycle beans stop
   * before singletons are destroyed).
   */
  @TestConfiguration(proxyBeanMethods = false)
  static class Recording {
    @Bean
    DisposableBean deleteTopology() {
      return () -> {
        KafkaFixture.shared().deleteTopic(TOPIC);
        KafkaFixture.shared().deleteTopic(TOPIC + ".DLT");
        try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("shop-it");
            Channel channel = connection.createChannel()) {
          channel.queueDelete(QUEUE);
          channel.queueDelete(QUEUE + ".dlq");
          channel.exchangeDelete(QUEUE + ".dlx");
        }
      };
    }

    @Bean
    OutcomeRecorder outcomes() {
      return new OutcomeRecorder();
    }

    @Bean
    IdemListenerFactory recordingListeners(OutcomeRecorder outcomes) {
      return group -> outcomes;
    }
  }
}
