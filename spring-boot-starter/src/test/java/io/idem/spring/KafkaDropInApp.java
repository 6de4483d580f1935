package io.idem.spring;

import io.idem.fixtures.KafkaFixture;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.support.converter.RecordMessageConverter;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The Spring Boot application of the Kafka drop-in tests, on the in-JVM Kafka broker and
 * PostgreSQL, shared by its test classes through Spring's context cache (same configuration):
 * {@code @Idempotent @KafkaListener}s as Spring users write them — taking the {@code
 * ConsumerRecord}, a {@code @Payload} POJO (JSON through a {@code StringJsonMessageConverter}),
 * the poll's records as a batch — on Spring Boot's default container settings: <b>no {@code
 * CommonErrorHandler} bean</b>, so the containers' default {@code DefaultErrorHandler} (10
 * deliveries, then log and skip), and {@code idem.retry.max-attempts} above it. One more listener
 * has {@code max.poll.interval.ms} / {@code max.poll.records} small enough that every retry is
 * handed back to the container (seek and pause) instead of waited for in the call.
 */
@SpringBootTest(classes = KafkaDropInApp.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=" + KafkaDropInApp.MAX_ATTEMPTS,
    "idem.retry.initial-backoff=10ms",
    "idem.retry.max-backoff=40ms",
    "idem.retention.enabled=false",
    "idem.dead-letter.spring-kafka-headers=true",
    "idem.outbox.publisher=kafka",
    "idem.outbox.relay.poll-interval=50ms",
    "spring.kafka.consumer.auto-offset-reset=earliest",
    // a partition Idem paused for a backoff resumes at the container's next poll
    "spring.kafka.listener.poll-timeout=200ms",
    // the hand-backs of the last listener: logged by Spring Kafka at DEBUG only
    "logging.level.org.springframework.kafka=WARN"})
abstract class KafkaDropInApp extends DropInTest {
  /** Above Spring Kafka's default error handler's 10 deliveries, which would skip the record. */
  static final int MAX_ATTEMPTS = 12;
  static final String RUN = UUID.randomUUID().toString();
  static final String RECORDS = "spring-dropin-records-" + RUN;
  static final String POJOS = "spring-dropin-pojos-" + RUN;
  static final String HAND_BACKS = "spring-dropin-handbacks-" + RUN;
  static final String BATCHES = "spring-dropin-batches-" + RUN;
  static final String BATCH_HAND_BACKS = "spring-dropin-batch-handbacks-" + RUN;
  static final String ORDERS = "spring-dropin-orders-" + RUN;
  static final String RECEIPTS = "spring-dropin-receipts-" + RUN;
  static final List<String> TOPICS = List.of(RECORDS, POJOS, HAND_BACKS, BATCHES, BATCH_HAND_BACKS, ORDERS, RECEIPTS);

  @DynamicPropertySource
  static void kafka(DynamicPropertyRegistry registry) {
    KafkaFixture kafka = KafkaFixture.shared();
    for (String topic : TOPICS) {
      kafka.createTopic(topic, 1);
      kafka.createTopic(topic + KafkaDeliveries.DEAD_LETTER_SUFFIX, 1);
    }
    registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    registry.add("test.records", () -> RECORDS);
    registry.add("test.pojos", () -> POJOS);
    registry.add("test.hand-backs", () -> HAND_BACKS);
    registry.add("test.batches", () -> BATCHES);
    registry.add("test.batch-hand-backs", () -> BATCH_HAND_BACKS);
    registry.add("test.orders", () -> ORDERS);
    registry.add("test.receipts", () -> RECEIPTS);
  }

  @Autowired KafkaTemplate<String, String> template;
  @Autowired DeadLetters deadLetterRecords;

  @Override
  public int maxAttempts() {
    return MAX_ATTEMPTS;
  }

  /** Sends {@code value} with record key {@code key}, and the key header unless {@code keyHeader} is false. */
  void send(String topic, String key, String value, boolean keyHeader) {
    ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, value);
    if (keyHeader) {
      record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
    }
    try {
      template.send(record).get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError("could not send to " + topic, e);
    }
  }

  /** A payment as JSON, for the POJO listener. */
  static String json(String key, String note) {
    return "{\"id\":\"" + key + "\",\"note\":\"" + note + "\"}";
  }

  /** The POJO the listener's {@code @Payload} is converted to. */
  record Payment(String id, String note) {}

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({DropInTestSupport.Beans.class, Listeners.class, SlowBatches.class, DeadLetters.class, Receipts.class})
  static class App {
    @Bean
    Rebalances rebalances() {
      return new Rebalances();
    }

    /** The application's own rebalance listener on every container, as Spring users set one. */
    @Bean
    org.springframework.kafka.config.ContainerCustomizer<Object, Object,
        org.springframework.kafka.listener.ConcurrentMessageListenerContainer<Object, Object>> rebalanceListener(
        Rebalances rebalances) {
      return container -> container.getContainerProperties().setConsumerRebalanceListener(rebalances);
    }

    /** JSON to a {@code @Payload} POJO, Spring Kafka's way; the record value stays a String. */
    @Bean
    @SuppressWarnings("deprecation") // Jackson 2's, present on both Spring Boot lines
    RecordMessageConverter jsonConverter() {
      return new org.springframework.kafka.support.converter.StringJsonMessageConverter();
    }

    /** Deletes the topics when the (cached) context closes. */
    @Bean
    DisposableBean deleteTopics() {
      return () -> TOPICS.forEach(topic -> {
        KafkaFixture.shared().deleteTopic(topic);
        KafkaFixture.shared().deleteTopic(topic + KafkaDeliveries.DEAD_LETTER_SUFFIX);
      });
    }
  }

  /** The application's rebalance listener: the partitions assigned, by Spring Kafka's consumer-aware callback. */
  static class Rebalances implements org.springframework.kafka.listener.ConsumerAwareRebalanceListener {
    final java.util.Set<org.apache.kafka.common.TopicPartition> assigned = ConcurrentHashMap.newKeySet();

    @Override
    public void onPartitionsAssigned(org.apache.kafka.clients.consumer.Consumer<?, ?> consumer,
        java.util.Collection<org.apache.kafka.common.TopicPartition> partitions) {
      assigned.addAll(partitions);
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;
    /** The record lists the batch listener was called with, by call. */
    private final List<List<String>> batchCalls = new CopyOnWriteArrayList<>();

    /** A method, not the field: this bean is Idem's CGLIB proxy, whose own fields are unset. */
    List<List<String>> batchCalls() {
      return batchCalls;
    }

    @KafkaListener(topics = "${test.records}", groupId = "${test.records}-billing")
    @Idempotent(consumerGroup = GROUP)
    public void onRecord(ConsumerRecord<String, String> record) {
      payments.apply(record.key(), record.value());
    }

    /** The key from the payload, through SpEL on the converted POJO. */
    @KafkaListener(topics = "${test.pojos}", groupId = "${test.pojos}-billing")
    @Idempotent(consumerGroup = GROUP, key = "#payment.id")
    public void onPayment(@Payload Payment payment, @Header(KafkaHeaders.RECEIVED_TOPIC) String topic) {
      payments.apply(payment.id(), payment.note());
    }

    /** Budget of max.poll.interval.ms / max.poll.records = 10 ms: every backoff is handed back. */
    @KafkaListener(topics = "${test.hand-backs}", groupId = "${test.hand-backs}-billing",
        properties = {"max.poll.interval.ms=1000", "max.poll.records=100"})
    @Idempotent(consumerGroup = GROUP)
    public void onHandedBack(ConsumerRecord<String, String> record) {
      payments.apply(record.key(), record.value());
    }

    @KafkaListener(topics = "${test.batches}", groupId = "${test.batches}-billing", batch = "true")
    @Idempotent(consumerGroup = GROUP)
    public void onBatch(List<ConsumerRecord<String, String>> records) {
      batchCalls.add(records.stream().map(ConsumerRecord::key).toList());
      for (ConsumerRecord<String, String> record : records) {
        payments.apply(record.key(), record.value());
      }
    }
  }

  /**
   * The outbox in a listener: a receipt per order, enqueued in Idem's transaction with the
   * order's key, published by the starter's relay ({@code idem.outbox.publisher=kafka}); and a
   * reader of the receipts topic.
   */
  static class Receipts {
    @Autowired DropInTestSupport.Payments payments;
    @Autowired IdemOutbox outbox;
    private final Map<String, String> published = new ConcurrentHashMap<>();

    @KafkaListener(topics = "${test.orders}", groupId = "${test.orders}-billing")
    @Idempotent(consumerGroup = GROUP)
    public void onOrder(@Payload Payment order) {
      payments.apply(order.id(), order.note());
      outbox.enqueue(RECEIPTS, ("receipt for " + order.note()).getBytes(StandardCharsets.UTF_8));
    }

    @KafkaListener(topics = "${test.receipts}", groupId = "${test.receipts}-reader")
    public void onReceipt(ConsumerRecord<String, String> record) {
      org.apache.kafka.common.header.Header key = record.headers().lastHeader("idempotency-key");
      published.merge(new String(key.value(), StandardCharsets.UTF_8), record.value(), (a, b) -> a + "|" + b);
    }

    /** The receipts published, by idempotency key (several joined with {@code |}). */
    Map<String, String> published() {
      return published;
    }
  }

  /**
   * A batch listener whose call may wait 500 ms (half of {@code max.poll.interval.ms}): a record
   * that fails slowly (100 ms a run) outlasts it, and the rest of the partition is handed back —
   * the records before it committed, the rest sought back and the partition paused.
   */
  static class SlowBatches {
    @Autowired DropInTestSupport.Payments payments;

    @KafkaListener(topics = "${test.batch-hand-backs}", groupId = "${test.batch-hand-backs}-billing",
        batch = "true", properties = "max.poll.interval.ms=1000")
    @Idempotent(consumerGroup = GROUP)
    public void onBatch(List<ConsumerRecord<String, String>> records) throws InterruptedException {
      for (ConsumerRecord<String, String> record : records) {
        if (record.value().startsWith("poison")) {
          Thread.sleep(100); // a slow failure
        }
        payments.apply(record.key(), record.value());
      }
    }
  }

  /** Reads the dead-letter topics, as an operator's tool would. */
  static class DeadLetters {
    @Autowired DropInTestSupport.DeadLetterInbox inbox;
    final Map<String, ConsumerRecord<String, String>> records = new ConcurrentHashMap<>();

    @KafkaListener(topics = {"${test.records}.DLT", "${test.pojos}.DLT", "${test.hand-backs}.DLT",
        "${test.batches}.DLT", "${test.batch-hand-backs}.DLT", "${test.orders}.DLT"}, groupId = "${test.records}-dlt")
    public void onDeadLetter(ConsumerRecord<String, String> record) {
      Map<String, String> headers = new ConcurrentHashMap<>();
      for (org.apache.kafka.common.header.Header header : record.headers()) {
        headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
      }
      records.put(record.key(), record);
      inbox.received(record.key(), headers);
    }
  }
}
