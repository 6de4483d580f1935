package io.idem.it;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.demo.Outbound;
import io.idem.fixtures.KafkaFixture;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One destination that several consumer instances compete for: a RabbitMQ quorum queue, an SQS
 * queue and a JMS queue as the demo brokers set them up (competing consumers), or a Kafka topic
 * of {@link #KAFKA_PARTITIONS} partitions read by one consumer group. Messages are spread so that
 * copies of one key are consumed by different instances at about the same time: on the queues by
 * round-robin dispatch, on Kafka by sending message {@code i} to partition {@code i % 8} (the
 * demo broker would keep a key on one partition, hence one instance).
 */
interface Competitors extends AutoCloseable {
  int KAFKA_PARTITIONS = 8;

  /** The broker's name ({@code kafka}, …). */
  String broker();

  /** The destination's name. */
  String destination();

  /** What the destination's dead-letter destination holds, without consuming it. */
  List<DeadLetteredMessage> readDeadLetters();

  /** Publishes in order; returns once the broker confirmed every message. */
  void publish(List<Outbound> messages);

  /** A new, not yet started, consumer instance of the destination running {@code pipeline}. */
  BrokerConsumer consumer(IdempotentConsumer<?> pipeline);

  /**
   * Like {@link #consumer(IdempotentConsumer)}, with at most {@code maxBatchSize} messages per
   * transaction (1: per-message mode).
   */
  BrokerConsumer consumer(IdempotentConsumer<?> pipeline, int maxBatchSize);

  /**
   * Waits until {@code instances} started consumers of {@code group} can all receive messages:
   * on Kafka, until the group is stable with a partition for each; queues need no waiting.
   */
  default void awaitConsumers(String group, int instances) {}

  /** Deletes the destination. */
  @Override
  void close();

  static Competitors on(String broker) {
    String destination = "idem-it-conc-" + broker + "-" + UUID.randomUUID().toString().substring(0, 8);
    return broker.equals("kafka") ? new KafkaTopic(destination) : new DemoQueue(DemoBrokers.create(broker), destination);
  }

  /** A queue of a demo broker. */
  final class DemoQueue implements Competitors {
    private final DemoBroker broker;
    private final String destination;

    DemoQueue(DemoBroker broker, String destination) {
      this.broker = broker;
      this.destination = destination;
      System.out.println("[" + broker.name() + "] " + broker.start());
      broker.createDestination(destination);
    }

    @Override
    public String broker() {
      return broker.name();
    }

    @Override
    public String destination() {
      return destination;
    }

    @Override
    public void publish(List<Outbound> messages) {
      broker.publish(destination, messages);
    }

    @Override
    public BrokerConsumer consumer(IdempotentConsumer<?> pipeline) {
      return broker.consumer(destination, pipeline);
    }

    @Override
    public BrokerConsumer consumer(IdempotentConsumer<?> pipeline, int maxBatchSize) {
      return broker.consumer(destination, pipeline, maxBatchSize);
    }

    @Override
    public List<DeadLetteredMessage> readDeadLetters() {
      return broker.readDeadLetters(destination);
    }

    @Override
    public void close() {
      broker.deleteDestination(destination);
      broker.close();
    }
  }

  /** A Kafka topic and its dead-letter topic; instances join the pipeline's consumer group. */
  final class KafkaTopic implements Competitors {
    private final String topic;
    private final KafkaProducer<byte[], byte[]> producer;

    KafkaTopic(String topic) {
      this.topic = topic;
      KafkaFixture kafka = KafkaFixture.shared();
      System.out.println("[kafka] Kafka: " + kafka.origin());
      kafka.createTopic(topic, KAFKA_PARTITIONS);
      kafka.createTopic(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX, 1);
      Properties props = new Properties();
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
      props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
      props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
      this.producer = new KafkaProducer<>(props);
    }

    @Override
    public String broker() {
      return "kafka";
    }

    @Override
    public String destination() {
      return topic;
    }

    @Override
    public List<DeadLetteredMessage> readDeadLetters() {
      // the demo's Kafka broker reads <topic>.DLT from the start without a consumer group
      try (DemoBroker kafka = DemoBrokers.create("kafka")) {
        kafka.start();
        return kafka.readDeadLetters(topic);
      }
    }

    @Override
    public void publish(List<Outbound> messages) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (int i = 0; i < messages.size(); i++) {
        Outbound m = messages.get(i);
        ProducerRecord<byte[], byte[]> record =
            new ProducerRecord<>(topic, i % KAFKA_PARTITIONS, null, m.payload());
        m.headers().forEach((name, value) -> record.headers().add(name, value));
        sent.add(producer.send(record));
      }
      try {
        for (Future<RecordMetadata> f : sent) {
          f.get(60, TimeUnit.SECONDS);
        }
      } catch (Exception e) {
        throw new IllegalStateException("publishing to " + topic + " failed: " + e, e);
      }
    }

    @Override
    public void awaitConsumers(String group, int instances) {
      Admin admin = KafkaFixture.shared().admin();
      await("consumer group " + group + " stable with " + instances + " members, each with a partition")
          .atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(200))
          .until(() -> {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups()
                .get(group).get(10, TimeUnit.SECONDS);
            return d.groupState() == GroupState.STABLE && d.members().size() == instances
                && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty());
          });
    }

    @Override
    public BrokerConsumer consumer(IdempotentConsumer<?> pipeline) {
      return consumer(pipeline, 1);
    }

    @Override
    public BrokerConsumer consumer(IdempotentConsumer<?> pipeline, int maxBatchSize) {
      return KafkaIdempotentConsumer.create(KafkaConsumerConfig.builder(KafkaFixture.shared().bootstrapServers(), topic)
          .maxBatchSize(maxBatchSize).build(), pipeline);
    }

    @Override
    public void close() {
      producer.close();
      KafkaFixture.shared().deleteTopic(topic);
      KafkaFixture.shared().deleteTopic(topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX);
    }
  }
}
