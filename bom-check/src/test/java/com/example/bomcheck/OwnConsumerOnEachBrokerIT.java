package com.example.bomcheck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.jms.JmsConsumerConfig;
import io.idem.jms.JmsHeaderNames;
import io.idem.jms.JmsIdempotentConsumer;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;
import jakarta.jms.JMSContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;

/**
 * A user's own consumer on each broker, built on the BOM's versions alone: order-1 twice (a
 * producer retry) and order-2 once are charged once each.
 */
class OwnConsumerOnEachBrokerIT {
  private static final Duration SETTLED = Duration.ofSeconds(60); // ~2 s; the margin is for a loaded machine
  private static final Map<String, Integer> ONCE_EACH = Map.of("order-1", 1, "order-2", 1);
  private final String run = UUID.randomUUID().toString().substring(0, 8);

  @Test
  void kafka() throws Exception {
    KafkaFixture kafka = KafkaFixture.shared();
    String topic = "bom-orders-" + run;
    kafka.createTopic(topic, 1);
    kafka.createTopic(topic + ".DLT", 1);
    try (HikariDataSource db = PostgresFixture.shared().newSchema("bom_kafka")) {
      Effects effects = new Effects(db, "billing-" + run);
      KafkaConsumerConfig config = KafkaConsumerConfig.builder(kafka.bootstrapServers(), topic).build();
      try (KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, effects.pipeline())) {
        consumer.start();
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
          for (String order : new String[] {"order-1", "order-1", "order-2"}) {
            var record = new ProducerRecord<String, String>(topic, order, "{\"total\":42}");
            record.headers().add("idempotency-key", order.getBytes(StandardCharsets.UTF_8));
            producer.send(record).get();
          }
        }
        await().atMost(SETTLED).until(() -> effects.charges().equals(ONCE_EACH));
      }
      assertThat(effects.charges()).isEqualTo(ONCE_EACH);
    } finally {
      kafka.deleteTopic(topic);
      kafka.deleteTopic(topic + ".DLT");
    }
  }

  @Test
  void rabbitMq() throws Exception {
    RabbitFixture rabbit = RabbitFixture.shared();
    String queue = "bom-orders-" + run;
    try (HikariDataSource db = PostgresFixture.shared().newSchema("bom_rabbit");
        var connection = rabbit.connectionFactory().newConnection("bom-check-" + run);
        Channel channel = connection.createChannel()) {
      Effects effects = new Effects(db, "billing-" + run);
      RabbitConsumerConfig config = RabbitConsumerConfig.builder(queue).uri(rabbit.uri()).declareTopology(true).build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, effects.pipeline())) {
        consumer.start();
        for (String order : new String[] {"order-1", "order-1", "order-2"}) {
          AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
              .headers(Map.of("idempotency-key", order)).build();
          channel.basicPublish("", queue, props, "{\"total\":42}".getBytes(StandardCharsets.UTF_8));
        }
        await().atMost(SETTLED).until(() -> effects.charges().equals(ONCE_EACH));
      } finally {
        for (String q : new String[] {queue, queue + ".dlq"}) {
          channel.queueDelete(q);
        }
        channel.exchangeDelete(queue + ".dlx");
      }
      assertThat(effects.charges()).isEqualTo(ONCE_EACH);
    }
  }

  /** Pointing the SDK at a local endpoint takes three settings: endpoint, region, credentials. */
  @Test
  void sqs() throws Exception {
    SqsFixture sqs = SqsFixture.shared();
    try (HikariDataSource db = PostgresFixture.shared().newSchema("bom_sqs");
        SqsClient client = sqs.newClient()) {
      String queueUrl = sqs.createQueue(client, "bom-orders-" + run, Map.of());
      String dlqUrl = sqs.createQueue(client, "bom-orders-dlq-" + run, Map.of());
      Effects effects = new Effects(db, "billing-" + run);
      SqsConsumerConfig config = SqsConsumerConfig.builder(queueUrl)
          .deadLetterQueueUrl(dlqUrl)
          .endpoint(sqs.endpoint())
          .region(sqs.region())
          .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
          .waitTime(Duration.ofSeconds(1))
          .build();
      try (SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, effects.pipeline())) {
        consumer.start();
        for (String order : new String[] {"order-1", "order-1", "order-2"}) {
          client.sendMessage(b -> b.queueUrl(queueUrl).messageBody("{\"total\":42}").messageAttributes(Map.of(
              "idempotency-key", MessageAttributeValue.builder().dataType("String").stringValue(order).build())));
        }
        await().atMost(SETTLED).until(() -> effects.charges().equals(ONCE_EACH));
      } finally {
        sqs.deleteQueue(client, queueUrl);
        sqs.deleteQueue(client, dlqUrl);
      }
      assertThat(effects.charges()).isEqualTo(ONCE_EACH);
    }
  }

  @Test
  void jms() throws Exception {
    ArtemisFixture artemis = ArtemisFixture.shared();
    String queue = "bom-orders-" + run;
    artemis.createQueue(queue);
    artemis.createQueue(queue + ".dlq");
    // the broker's own dead-letter address for this queue: the same as Idem's (docs/BROKERS.md)
    artemis.addressSettings(queue, ArtemisFixture.AddressPolicy.deadLetterTo(queue + ".dlq"));
    try (HikariDataSource db = PostgresFixture.shared().newSchema("bom_jms");
        JMSContext context = artemis.connectionFactory().createContext()) {
      Effects effects = new Effects(db, "billing-" + run);
      JmsConsumerConfig config = JmsConsumerConfig.builder(artemis.connectionFactory(), queue, queue + ".dlq").build();
      try (JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(config, effects.pipeline())) {
        consumer.start();
        var producer = context.createProducer();
        for (String order : new String[] {"order-1", "order-1", "order-2"}) {
          producer.setProperty(JmsHeaderNames.DEFAULT_KEY_PROPERTY, order)
              .send(context.createQueue(queue), "{\"total\":42}");
        }
        await().atMost(SETTLED).until(() -> effects.charges().equals(ONCE_EACH));
      }
      assertThat(effects.charges()).isEqualTo(ONCE_EACH);
    } finally {
      artemis.removeAddressSettings(queue);
      artemis.deleteQueue(queue);
      artemis.deleteQueue(queue + ".dlq");
    }
  }
}
