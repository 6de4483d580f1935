package io.idem.kafka;

import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.MessageHandler;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * Shared set-up of the Kafka-specific ITs: a fresh topic and dead-letter topic, a fresh consumer
 * group, a PostgreSQL schema with the processed-events table and {@link TestEffects}.
 */
abstract class KafkaITSupport {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  static final String KEY = "idempotency-key";

  protected String topic;
  protected String deadLetterTopic;
  protected String group;
  protected HikariDataSource dataSource;
  protected MyBatisProcessedEventStore store;
  protected TestEffects effects;
  protected final OutcomeRecorder outcomes = new OutcomeRecorder();
  protected KafkaProducer<byte[], byte[]> producer;
  private final List<KafkaIdempotentConsumer> consumers = Collections.synchronizedList(new ArrayList<>());

  /** Partitions of the test topic; default 1. */
  protected int partitions() {
    return 1;
  }

  /** Fast retries for tests: 3 attempts, 100 ms fixed backoff. */
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100)).multiplier(1.0).jitter(0).build();
  }

  @BeforeEach
  void setUpKafkaIt(TestInfo info) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String name = info.getTestClass().map(Class::getSimpleName).orElse("it")
        .replace("IT", "").replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase();
    topic = (name.length() > 40 ? name.substring(0, 40) : name) + "-" + run;
    deadLetterTopic = topic + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX;
    group = "g-" + run;
    KafkaTestClients.kafka().createTopic(topic, partitions());
    KafkaTestClients.kafka().createTopic(deadLetterTopic, 1);
    dataSource = PostgresFixture.shared().newSchema("kafka_it");
    effects = new TestEffects(dataSource);
    effects.createTable();
    store = MyBatisProcessedEventStore.builder(sessions(dataSource)).createTableIfMissing(true).build();
    producer = KafkaTestClients.producer();
  }

  @AfterEach
  void tearDownKafkaIt() {
    List<KafkaIdempotentConsumer> started = new ArrayList<>(consumers);
    Collections.reverse(started);
    started.forEach(KafkaIdempotentConsumer::close);
    if (producer != null) {
      producer.close();
    }
    if (dataSource != null) {
      dataSource.close();
    }
    KafkaTestClients.kafka().deleteTopic(topic);
    KafkaTestClients.kafka().deleteTopic(deadLetterTopic);
  }

  static SqlSessionFactory sessions(javax.sql.DataSource dataSource) {
    return new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("kafka-it", new JdbcTransactionFactory(), dataSource)));
  }

  /** A handler writing one effect row keyed by the message's key header. */
  static MessageHandler<SqlSession> recording() {
    return (message, session) -> TestEffects.record(session, keyOf(message), message.payload());
  }

  static String keyOf(io.idem.InboundMessage message) {
    String key = message.header(KEY);
    return key == null ? "(none)" : key;
  }

  /** The test pipeline: {@link #outcomes} and then {@code more} as listeners. */
  protected IdempotentConsumer<SqlSession> pipeline(MessageHandler<SqlSession> handler, IdempotencyListener... more) {
    IdempotentConsumer.Builder<SqlSession> builder = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler(handler)
        .retryPolicy(retryPolicy())
        .listener(outcomes);
    for (IdempotencyListener listener : more) {
      builder.listener(listener);
    }
    return builder.build();
  }

  /** Creates and starts an adapter consumer on the test topic; closed after the test. */
  protected KafkaIdempotentConsumer start(
      MessageHandler<SqlSession> handler, UnaryOperator<KafkaConsumerConfig.Builder> settings) {
    return start(pipeline(handler), settings);
  }

  protected KafkaIdempotentConsumer start(
      IdempotentConsumer<SqlSession> pipeline, UnaryOperator<KafkaConsumerConfig.Builder> settings) {
    return start(pipeline, settings, KafkaProducer::new);
  }

  /** Like {@link #start(IdempotentConsumer, UnaryOperator)}, with the dead-letter producer from {@code producers}. */
  protected KafkaIdempotentConsumer start(
      IdempotentConsumer<SqlSession> pipeline,
      UnaryOperator<KafkaConsumerConfig.Builder> settings,
      Function<Map<String, Object>, ? extends Producer<byte[], byte[]>> producers) {
    KafkaConsumerConfig config =
        settings.apply(KafkaConsumerConfig.builder(KafkaTestClients.bootstrap(), topic)).build();
    KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline, KafkaConsumer::new, producers);
    consumers.add(consumer);
    consumer.start();
    return consumer;
  }

  /** Publishes to {@code partition} with the key header and waits for the broker. */
  protected void publish(int partition, String key, String payload) {
    RecordHeaders headers = new RecordHeaders();
    headers.add(KEY, key.getBytes(StandardCharsets.UTF_8));
    KafkaTestClients.send(producer, new ProducerRecord<>(topic, partition, key.getBytes(StandardCharsets.UTF_8),
        payload.getBytes(StandardCharsets.UTF_8), headers));
  }

  /** Committed offset of the test group on {@code partition}, or -1 when none. */
  protected long committed(int partition) {
    return KafkaTestClients.committed(group, topic).getOrDefault(new TopicPartition(topic, partition), -1L);
  }

  protected Map<TopicPartition, Long> committedOffsets() {
    return KafkaTestClients.committed(group, topic);
  }

  protected long lag() {
    return KafkaTestClients.lag(group, topic);
  }

  protected void awaitSettled() {
    await("no lag on " + topic).atMost(TIMEOUT).until(() -> lag() == 0);
  }
}
