package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.idem.BrokerConsumer;
import io.idem.KeyedMessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.sqs.SqsIdempotentConsumer;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * Consumers from configuration ({@code idem.consumers.<name>.*}, Idem's own adapters) on handler
 * beans that write with the application's JdbcTemplate. {@code billing} (Kafka): started with the
 * context, its duplicate skipped, its health indicator UP, its entry in the info contributor, and
 * with no {@code max-batch-size} the adapter's default. {@code sqs-each}/{@code sqs-batch} (the
 * fixtures' ElasticMQ) and {@code rabbit-each}/{@code rabbit-batch} (RabbitMQ, the latter with a
 * {@code prefetch}): {@code max-batch-size: 1} runs one PostgreSQL transaction per message, an
 * explicit larger size runs a backlog (sent before the context starts) in shared transactions,
 * told apart by each handler run's {@code txid_current()}; each event applied once either way.
 */
@SpringBootTest(classes = ConfiguredConsumerIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retention.enabled=false",
    "idem.consumers.billing.broker=kafka",
    "idem.consumers.billing.handler=billingHandler",
    "idem.consumers.billing.consumer-group=" + DropInListenerContract.GROUP,
    "idem.consumers.billing.shutdown-timeout=5s",
    "idem.consumers.billing.kafka-properties[auto.offset.reset]=earliest",
    "idem.consumers.sqs-each.broker=sqs",
    "idem.consumers.sqs-each.handler=ledgerHandler",
    "idem.consumers.sqs-each.max-batch-size=1",
    "idem.consumers.sqs-each.shutdown-timeout=5s",
    "idem.consumers.sqs-batch.broker=sqs",
    "idem.consumers.sqs-batch.handler=ledgerHandler",
    "idem.consumers.sqs-batch.max-batch-size=10",
    "idem.consumers.sqs-batch.shutdown-timeout=5s",
    "idem.consumers.rabbit-each.broker=rabbitmq",
    "idem.consumers.rabbit-each.handler=ledgerHandler",
    "idem.consumers.rabbit-each.declare-topology=true",
    "idem.consumers.rabbit-each.max-batch-size=1",
    "idem.consumers.rabbit-each.shutdown-timeout=5s",
    "idem.consumers.rabbit-batch.broker=rabbitmq",
    "idem.consumers.rabbit-batch.handler=ledgerHandler",
    "idem.consumers.rabbit-batch.declare-topology=true",
    "idem.consumers.rabbit-batch.max-batch-size=5",
    "idem.consumers.rabbit-batch.prefetch=20",
    "idem.consumers.rabbit-batch.shutdown-timeout=5s"})
class ConfiguredConsumerIT {
  static final String TOPIC = "spring-configured-" + UUID.randomUUID();
  /** The batch-size consumers, each on a queue of its own named after it. */
  static final List<String> SQS = List.of("sqs-each", "sqs-batch");
  static final List<String> RABBIT = List.of("rabbit-each", "rabbit-batch");
  /** Keys per batch-size consumer, each sent twice, all before the context starts. */
  static final int KEYS = 6;
  static final String RUN = UUID.randomUUID().toString();
  static final Map<String, String> QUEUES = new ConcurrentHashMap<>();

  @DynamicPropertySource
  static void brokers(DynamicPropertyRegistry registry) throws Exception {
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(TOPIC, 1);
    registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    registry.add("idem.consumers.billing.source", () -> TOPIC);

    SqsFixture sqs = SqsFixture.shared();
    // the starter's SQS consumer builds its client on the SDK's credentials chain; the emulator's
    // dummy credentials, as SqsFixture.configure gives its own clients
    System.setProperty("aws.accessKeyId", System.getProperty("aws.accessKeyId", "idem"));
    System.setProperty("aws.secretAccessKey", System.getProperty("aws.secretAccessKey", "idem"));
    try (SqsClient client = sqs.newClient()) {
      for (String name : SQS) {
        String url = sqs.createQueue(client, "spring-configured-" + name + "-" + RUN, Map.of());
        String deadLetter = sqs.createQueue(client, "spring-configured-" + name + "-" + RUN + "-dlq", Map.of());
        QUEUES.put(name, url);
        QUEUES.put(name + ".dlq", deadLetter);
        registry.add("idem.consumers." + name + ".source", () -> url);
        registry.add("idem.consumers." + name + ".dead-letter", () -> deadLetter);
        registry.add("idem.consumers." + name + ".endpoint", () -> sqs.endpoint().toString());
        registry.add("idem.consumers." + name + ".region", sqs::region);
        for (int copy = 0; copy < 2; copy++) {
          for (String key : keys(name)) {
            client.sendMessage(r -> r.queueUrl(url).messageBody("pay 40").messageAttributes(Map.of(
                "idempotency-key", MessageAttributeValue.builder().dataType("String").stringValue(key).build())));
          }
        }
      }
    }

    RabbitFixture rabbit = RabbitFixture.shared();
    try (Connection connection = rabbit.connectionFactory().newConnection(); Channel channel = connection.createChannel()) {
      for (String name : RABBIT) {
        String queue = "spring-configured-" + name + "-" + RUN;
        QUEUES.put(name, queue);
        // declared as the adapter declares it (declare-topology), so that the backlog is there first
        channel.queueDeclare(queue, true, false, false, RabbitConsumerConfig.builder(queue).build().queueArguments());
        registry.add("idem.consumers." + name + ".source", () -> queue);
        registry.add("idem.consumers." + name + ".uri", rabbit::uri);
        for (int copy = 0; copy < 2; copy++) {
          for (String key : keys(name)) {
            channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
                .headers(Map.<String, Object>of("idempotency-key", key)).build(), "pay 40".getBytes(StandardCharsets.UTF_8));
          }
        }
      }
    }
  }

  @AfterAll
  static void deleteTopicAndQueues() throws Exception {
    KafkaFixture.shared().deleteTopic(TOPIC);
    SqsFixture sqs = SqsFixture.shared();
    try (SqsClient client = sqs.newClient()) {
      for (String name : SQS) {
        sqs.deleteQueue(client, QUEUES.get(name));
        sqs.deleteQueue(client, QUEUES.get(name + ".dlq"));
      }
    }
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection();
        Channel channel = connection.createChannel()) {
      for (String name : RABBIT) {
        RabbitConsumerConfig topology = RabbitConsumerConfig.builder(QUEUES.get(name)).build();
        channel.queueDelete(topology.queue());
        channel.queueDelete(topology.deadLetterQueue());
        channel.exchangeDelete(topology.deadLetterExchange());
      }
    }
  }

  /** The keys sent to the consumer {@code name}. */
  static List<String> keys(String name) {
    return IntStream.range(0, KEYS).mapToObj(i -> name + "-" + RUN + "-" + i).toList();
  }

  @Autowired KafkaTemplate<String, String> template;
  @Autowired DropInTestSupport.Payments payments;
  @Autowired DropInTestSupport.Outcomes outcomes;
  /** Spring Boot 4's or 3.5's CompositeHealthContributor ({@link BootLines#health}). */
  @Autowired @Qualifier("idemConsumersHealthContributor") Object idemConsumersHealthContributor;
  @Autowired IdemInfoContributor idemInfo;
  @Autowired IdemConsumers idemConsumers;
  @Autowired Transactions transactions;
  @Autowired JdbcTemplate jdbc;

  @Test
  void aConfiguredConsumerSkipsTheDuplicateAndReportsItsHealth() throws Exception {
    String key = "k-" + UUID.randomUUID();
    for (int i = 0; i < 2; i++) {
      ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, key, "pay 40");
      record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
      template.send(record).get(30, TimeUnit.SECONDS);
    }

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DUPLICATE));
    assertThat(outcomes.of(key)).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(payments.rows(key)).isEqualTo(1);
    BootLines.HealthReading billing = BootLines.health(idemConsumersHealthContributor, "billing");
    assertThat(billing.status()).isEqualTo("UP");
    assertThat(billing.details()).containsEntry("storeAvailable", true);
    Info.Builder info = new Info.Builder();
    idemInfo.contribute(info);
    assertThat(info.build().get("idem")).asInstanceOf(InstanceOfAssertFactories.MAP)
        .containsEntry("consumerGroups", List.of(DropInListenerContract.GROUP, "rabbit-batch", "rabbit-each",
            "sqs-batch", "sqs-each"))
        .extractingByKey("consumers").asInstanceOf(InstanceOfAssertFactories.MAP)
        .containsEntry("billing", Map.of("broker", "kafka", "source", TOPIC, "consumerGroup", DropInListenerContract.GROUP));
    // no max-batch-size: the adapter's default, whatever it is
    assertThat(consumer("billing", KafkaIdempotentConsumer.class).config().maxBatchSize())
        .isEqualTo(KafkaConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
  }

  /**
   * {@code max-batch-size} reaches each adapter's config: 1 runs each message in a transaction of
   * its own, an explicit size runs the backlog in shared ones (and RabbitMQ's {@code prefetch}
   * reaches its config); every key applied once, marked once, its second copy a duplicate.
   */
  @Test
  void maxBatchSizeOneRunsPerMessageAndAnExplicitSizeRunsBatches() {
    assertThat(consumer("sqs-each", SqsIdempotentConsumer.class).config().maxBatchSize()).isEqualTo(1);
    assertThat(consumer("sqs-batch", SqsIdempotentConsumer.class).config().maxBatchSize()).isEqualTo(10);
    assertThat(consumer("rabbit-each", RabbitIdempotentConsumer.class).config().maxBatchSize()).isEqualTo(1);
    assertThat(consumer("rabbit-each", RabbitIdempotentConsumer.class).config().prefetch())
        .isEqualTo(RabbitConsumerConfig.DEFAULT_PREFETCH);
    RabbitConsumerConfig rabbitBatch = consumer("rabbit-batch", RabbitIdempotentConsumer.class).config();
    assertThat(rabbitBatch.maxBatchSize()).isEqualTo(5);
    assertThat(rabbitBatch.prefetch()).isEqualTo(20);

    for (String name : List.of("sqs-each", "sqs-batch", "rabbit-each", "rabbit-batch")) {
      List<String> keys = keys(name);
      await().atMost(WAIT).untilAsserted(() -> assertThat(keys)
          .allSatisfy(key -> assertThat(outcomes.of(key)).hasSize(2)));
      for (String key : keys) {
        assertThat(outcomes.of(key)).as(name + " " + key)
            .containsExactlyInAnyOrder(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
        assertThat(payments.rows(key)).as(name + " " + key).isOne();
      }
      assertThat(jdbc.queryForObject("SELECT count(*) FROM idem_processed_events WHERE consumer_group = ?",
          Integer.class, name)).as(name + " markers").isEqualTo(KEYS);
      int distinct = new HashSet<>(transactions.of(keys)).size();
      if (name.endsWith("-each")) {
        assertThat(distinct).as(name + ": one transaction per message").isEqualTo(KEYS);
      } else {
        assertThat(distinct).as(name + ": the backlog in shared transactions").isLessThan(KEYS);
      }
    }
  }

  private <T extends BrokerConsumer> T consumer(String name, Class<T> type) {
    return type.cast(idemConsumers.consumers().get(name));
  }

  /** The PostgreSQL transaction ({@code txid_current()}) each key's handler run was in. */
  static final class Transactions {
    private final Map<String, Long> byKey = new ConcurrentHashMap<>();

    void record(String key, long txid) {
      byKey.put(key, txid);
    }

    List<Long> of(List<String> keys) {
      return keys.stream().map(byKey::get).toList();
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(DropInTestSupport.Beans.class)
  static class App {
    @Bean
    KeyedMessageHandler<SqlSession> billingHandler(DropInTestSupport.Payments payments) {
      return (key, message, session) ->
          payments.apply(key.value(), new String(message.payload(), StandardCharsets.UTF_8));
    }

    @Bean
    Transactions transactions() {
      return new Transactions();
    }

    /** The batch-size consumers' handler: {@link #billingHandler}'s write, and its transaction's id. */
    @Bean
    KeyedMessageHandler<SqlSession> ledgerHandler(DropInTestSupport.Payments payments, Transactions transactions,
        JdbcTemplate jdbc) {
      return (key, message, session) -> {
        Long txid = jdbc.queryForObject("SELECT txid_current()", Long.class);
        transactions.record(key.value(), txid == null ? -1 : txid);
        payments.apply(key.value(), new String(message.payload(), StandardCharsets.UTF_8));
      };
    }
  }
}
