package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.AMQP;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.SqsFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.core.ThrowingRunnable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The ordering of {@code @Idempotent} on a Spring listener container, proved by killing the
 * application between Idem's commit and the container's acknowledgement: a Spring Boot
 * application ({@link SpringCrashChild}) in a child JVM halts itself ({@code Runtime.halt}, like
 * {@code kill -9}) at {@link CrashPoint#AFTER_COMMIT} — the event's row and Idem's marker are
 * committed, the listener method has not returned, so Spring Kafka has not committed the offset
 * (AckMode BATCH) and Spring AMQP has not sent {@code basic.ack} (AcknowledgeMode AUTO). The
 * crashed event is then still on the broker: the restarted application receives it again and Idem
 * skips it as a duplicate. Checked in PostgreSQL: every event's row exactly once, none doubled,
 * none missing; and on the broker: the crashed event was not acknowledged.
 */
class SpringListenerCrashIT {
  private static final int EVENTS = 30;
  /** The victim halts at the AFTER_COMMIT of event {@value} (0-based): 11 events applied. */
  private static final int CRASH_AFTER = 10;
  /** A child Spring Boot application starting on a loaded 2-core machine, then joining its group. */
  private static final Duration WAIT = Duration.ofSeconds(90);

  private HikariDataSource database;
  private JdbcTemplate jdbc;
  private final List<Runnable> cleanup = new ArrayList<>();

  @BeforeEach
  void schema() {
    database = PostgresFixture.shared().newSchema("spring_crash");
    jdbc = new JdbcTemplate(database);
    jdbc.execute("CREATE TABLE effects (id text NOT NULL)");
  }

  @AfterEach
  void cleanUp() {
    cleanup.forEach(Runnable::run);
    database.close();
  }

  @Test
  void kafkaListenerHaltedAfterIdemsCommitBeforeTheOffsetCommit() {
    String topic = kafkaTopicWithEvents();
    String crashedKey = haltAfterIdemsCommit("kafka", topic);
    // the container's acknowledgement did not: the offset is not past the crashed event
    long committed = committedOffset(topic);
    assertThat(committed).as("committed offset").isLessThanOrEqualTo(CRASH_AFTER);

    recover("kafka", topic, CRASH_AFTER + 1 - committed, crashedKey,
        () -> assertThat(committedOffset(topic)).isEqualTo(EVENTS));
  }

  @Test
  void kafkaListenerKilledAtARandomMoment() {
    String topic = kafkaTopicWithEvents();
    long applied;
    long committed;
    try (ChildJvm victim = child("victim", "kafka", topic, null, 100)) {
      await("some events applied").atMost(WAIT).until(() -> total() >= 5 || !victim.isAlive());
      victim.kill(); // SIGKILL, wherever the listener thread is
      applied = total();
      committed = committedOffset(topic);
    }
    assertThat(applied).as("applied before the kill").isBetween(5L, (long) EVENTS - 1);
    assertThat(doubled()).isZero();
    // what was applied but not acknowledged comes back and is skipped
    recover("kafka", topic, applied - committed, null,
        () -> assertThat(committedOffset(topic)).isEqualTo(EVENTS));
  }

  @Test
  void rabbitListenerHaltedAfterIdemsCommitBeforeTheBasicAck() throws Exception {
    String queue = "spring-crash-" + UUID.randomUUID();
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("spring-crash-it");
        Channel channel = connection.createChannel()) {
      channel.queueDeclare(queue, false, false, false, null);
      cleanup.add(() -> deleteQueue(queue));
      for (int i = 0; i < EVENTS; i++) {
        channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
            .messageId(UUID.randomUUID().toString())
            .headers(Map.<String, Object>of("idempotency-key", key(i)))
            .build(), key(i).getBytes(StandardCharsets.UTF_8));
      }
      String crashedKey = haltAfterIdemsCommit("rabbitmq", queue);
      // the broker requeues what the dead connection had not acknowledged: the crashed event among it
      await("unacknowledged events requeued").atMost(WAIT)
          .until(() -> channel.queueDeclarePassive(queue).getMessageCount() >= EVENTS - CRASH_AFTER);
      long acked = EVENTS - channel.queueDeclarePassive(queue).getMessageCount();
      assertThat(acked).as("acknowledged").isLessThanOrEqualTo(CRASH_AFTER);

      recover("rabbitmq", queue, CRASH_AFTER + 1 - acked, crashedKey,
          () -> assertThat(channel.queueDeclarePassive(queue).getMessageCount()).isZero());
    }
  }

  /**
   * A message whose handler halts the JVM every time (docs/FAILURES.md, "Attempts that survive the
   * process"): RabbitMQ redelivers it flagged {@code redelivered}, the starter counts its attempt
   * in the store before the handler, and after {@code idem.retry.max-attempts} deaths Idem
   * dead-letters it with MAX_ATTEMPTS_EXCEEDED without running it; every other event is applied
   * once, none dead-lettered.
   */
  @Test
  void rabbitListenerWhoseMessageKillsTheProcessDeadLettersItAfterMaxAttemptsDeaths() throws Exception {
    String queue = "spring-poison-" + UUID.randomUUID();
    String poison = key(3);
    int maxAttempts = 3;
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("spring-crash-it");
        Channel channel = connection.createChannel()) {
      channel.queueDeclare(queue, false, false, false, null);
      channel.queueDeclare(queue + ".dlq", false, false, false, null);
      cleanup.add(() -> deleteQueue(queue));
      cleanup.add(() -> deleteQueue(queue + ".dlq"));
      for (int i = 0; i < EVENTS; i++) {
        channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
            .messageId(UUID.randomUUID().toString())
            .headers(Map.<String, Object>of("idempotency-key", key(i)))
            .build(), key(i).getBytes(StandardCharsets.UTF_8));
      }
      int deaths = 0;
      while (true) {
        ChildJvm run = child("run-" + deaths, "rabbitmq", queue, null, 0,
            "-Dtest.poison=" + poison, "-Didem.retry.max-attempts=" + maxAttempts);
        try (run) {
          await("the application dies or dead-letters the poison").atMost(WAIT).until(() ->
              !run.isAlive() || channel.queueDeclarePassive(queue + ".dlq").getMessageCount() > 0);
          if (run.isAlive()) {
            await("every other event applied and the queue drained").atMost(WAIT).untilAsserted(() -> {
              assertThat(run.isAlive()).as("alive").isTrue();
              assertThat(distinct()).isEqualTo(EVENTS - 1);
              assertThat(channel.queueDeclarePassive(queue).getMessageCount()).isZero();
            });
            break;
          }
        }
        deaths++;
        assertThat(deaths).as("process deaths of the poison message").isLessThanOrEqualTo(maxAttempts);
      }
      assertThat(deaths).as("process deaths of the poison message").isEqualTo(maxAttempts);
      assertThat(count(poison)).isZero();
      assertThat(total()).isEqualTo(EVENTS - 1);
      assertThat(doubled()).isZero();
      com.rabbitmq.client.GetResponse dead = channel.basicGet(queue + ".dlq", true);
      assertThat(dead).isNotNull();
      assertThat(new String(dead.getBody(), StandardCharsets.UTF_8)).isEqualTo(poison);
      assertThat(String.valueOf(dead.getProps().getHeaders().get(io.idem.DeadLetterReason.HEADER_CAUSE)))
          .isEqualTo("MAX_ATTEMPTS_EXCEEDED");
      assertThat(channel.queueDeclarePassive(queue + ".dlq").getMessageCount()).as("other dead letters").isZero();
    }
  }

  /**
   * A record whose handler halts the JVM every time, on Kafka, which has no redelivered flag: the
   * restarted application gets the partition assigned and flags its records as possible
   * redeliveries until one is applied ({@code KafkaAssignments}), so the poison's attempt is
   * counted in the store before each run; after {@code idem.retry.max-attempts} deaths Idem
   * dead-letters it to {@code <topic>.DLT} with MAX_ATTEMPTS_EXCEEDED without running it, and
   * every other event is applied once, the offsets committed past them all. On the code before
   * it the poison was polled again from the committed offset after every restart.
   */
  @Test
  void kafkaListenerWhoseRecordKillsTheProcessDeadLettersItAfterMaxAttemptsDeaths() {
    kafkaRecordKillsTheProcess("kafka");
  }

  /**
   * The same with a batch listener: a batch holding flagged records is processed record by
   * record (Idem's batch rules), so the poison dies alone and its attempt is counted each time.
   */
  @Test
  void kafkaBatchListenerWhoseRecordKillsTheProcessDeadLettersItAfterMaxAttemptsDeaths() {
    kafkaRecordKillsTheProcess("kafka-batch");
  }

  /**
   * A flagged delivery counts as the store's count + 1 (the earlier run it stands for), which for
   * Kafka's guess — the first records after an assignment, usually new — would dead-letter the
   * first record of every assignment unrun when {@code idem.retry.max-attempts=1}: there Kafka
   * records are not flagged, and every event is applied.
   */
  @Test
  void kafkaListenerWithOneAttemptAppliesTheFirstRecordsOfItsAssignment() {
    String topic = kafkaTopicWithEvents();
    String deadLetters = topic + KafkaDeliveries.DEAD_LETTER_SUFFIX;
    KafkaFixture.shared().createTopic(deadLetters, 1);
    cleanup.add(() -> KafkaFixture.shared().deleteTopic(deadLetters));
    try (ChildJvm run = child("one-attempt", "kafka", topic, null, 0, "-Didem.retry.max-attempts=1")) {
      await("every event applied and the offsets committed").atMost(WAIT).untilAsserted(() -> {
        assertThat(run.isAlive()).as("alive").isTrue();
        assertThat(committedOffset(topic)).isEqualTo(EVENTS);
      });
      assertThat(distinct()).isEqualTo(EVENTS);
      assertThat(total()).isEqualTo(EVENTS);
      assertThat(endOffset(deadLetters)).as("dead letters").isZero();
    }
  }

  private void kafkaRecordKillsTheProcess(String broker) {
    String topic = kafkaTopicWithEvents();
    String deadLetters = topic + KafkaDeliveries.DEAD_LETTER_SUFFIX;
    KafkaFixture.shared().createTopic(deadLetters, 1);
    cleanup.add(() -> KafkaFixture.shared().deleteTopic(deadLetters));
    String poison = key(3);
    int maxAttempts = 3;
    int deaths = 0;
    while (true) {
      ChildJvm run = child("run-" + deaths, broker, topic, null, 0,
          "-Dtest.poison=" + poison, "-Didem.retry.max-attempts=" + maxAttempts);
      try (run) {
        await("the application dies or dead-letters the poison").atMost(WAIT).until(() ->
            !run.isAlive() || endOffset(deadLetters) > 0);
        if (run.isAlive()) {
          await("every other event applied and the offsets committed").atMost(WAIT).untilAsserted(() -> {
            assertThat(run.isAlive()).as("alive").isTrue();
            assertThat(distinct()).isEqualTo(EVENTS - 1);
            assertThat(committedOffset(topic)).isEqualTo(EVENTS);
          });
          break;
        }
      }
      deaths++;
      assertThat(deaths).as("process deaths of the poison record").isLessThanOrEqualTo(maxAttempts);
    }
    // the record listener's first life ran the poison unflagged (a record before it was applied);
    // the batch listener's flags its first batch whole, so when that batch held the poison its
    // first death counted too
    assertThat(deaths).as("process deaths of the poison record")
        .isBetween(broker.equals("kafka") ? maxAttempts : maxAttempts - 1, maxAttempts);
    assertThat(count(poison)).isZero();
    assertThat(total()).isEqualTo(EVENTS - 1);
    assertThat(doubled()).isZero();
    List<ConsumerRecord<String, String>> dead = records(deadLetters);
    assertThat(dead).as("dead letters").hasSize(1);
    assertThat(dead.get(0).value()).isEqualTo(poison);
    Header cause = dead.get(0).headers().lastHeader(io.idem.DeadLetterReason.HEADER_CAUSE);
    assertThat(cause).isNotNull();
    assertThat(new String(cause.value(), StandardCharsets.UTF_8)).isEqualTo("MAX_ATTEMPTS_EXCEEDED");
  }

  /**
   * A message whose handler halts the JVM every time, on a {@code @JmsListener} (Artemis, Boot's
   * default factory): the restarted application sees it redelivered ({@code JMSRedelivered},
   * {@code JMSXDeliveryCount} raised by each death) without knowing how the earlier run ended, so
   * its attempt is counted in the store before each run; after {@code idem.retry.max-attempts}
   * deaths Idem dead-letters it to {@code <queue>.dlq} with MAX_ATTEMPTS_EXCEEDED without running
   * it, and every other event is applied once.
   */
  @Test
  void jmsListenerWhoseMessageKillsTheProcessDeadLettersItAfterMaxAttemptsDeaths() {
    String queue = jmsQueueWithEvents();
    ArtemisFixture artemis = ArtemisFixture.shared();
    artemis.createQueue(queue + ".dlq");
    cleanup.add(() -> artemis.deleteQueue(queue + ".dlq"));
    String poison = key(3);
    int maxAttempts = 3;
    int deaths = 0;
    while (true) {
      ChildJvm run = child("run-" + deaths, "jms", queue, null, 0,
          "-Dtest.poison=" + poison, "-Didem.retry.max-attempts=" + maxAttempts);
      try (run) {
        await("the application dies or dead-letters the poison").atMost(WAIT).until(() ->
            !run.isAlive() || artemis.messageCount(queue + ".dlq") > 0);
        if (run.isAlive()) {
          await("every other event applied and the queue drained").atMost(WAIT).untilAsserted(() -> {
            assertThat(run.isAlive()).as("alive").isTrue();
            assertThat(distinct()).isEqualTo(EVENTS - 1);
            assertThat(artemis.messageCount(queue)).isZero();
          });
          break;
        }
      }
      deaths++;
      assertThat(deaths).as("process deaths of the poison message").isLessThanOrEqualTo(maxAttempts);
    }
    assertThat(deaths).as("process deaths of the poison message").isEqualTo(maxAttempts);
    assertThat(count(poison)).isZero();
    assertThat(total()).isEqualTo(EVENTS - 1);
    assertThat(doubled()).isZero();
    assertThat(artemis.messageCount(queue + ".dlq")).as("dead letters: the poison only").isEqualTo(1);
    try (jakarta.jms.JMSContext context = artemis.connectionFactory().createContext();
        jakarta.jms.JMSConsumer consumer = context.createConsumer(context.createQueue(queue + ".dlq"))) {
      jakarta.jms.Message dead = consumer.receive(WAIT.toMillis());
      assertThat(dead).isNotNull();
      assertThat(dead.getStringProperty("idem_dead_letter_cause")).isEqualTo("MAX_ATTEMPTS_EXCEEDED");
      assertThat(dead.getBody(String.class)).isEqualTo(poison);
    } catch (jakarta.jms.JMSException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The same on an {@code @SqsListener} (ElasticMQ in this JVM, outliving the application): the
   * poison comes back after its visibility timeout with {@code ApproximateReceiveCount} above 1,
   * which the restarted application cannot account for, so it is counted in the store before each
   * run and dead-lettered to {@code <queue>-dlq} after {@code idem.retry.max-attempts} deaths.
   */
  @Test
  void sqsListenerWhoseMessageKillsTheProcessDeadLettersItAfterMaxAttemptsDeaths() {
    String queueUrl = sqsQueueWithEvents();
    SqsFixture sqs = SqsFixture.shared();
    software.amazon.awssdk.services.sqs.SqsClient client = sqs.newClient();
    String dlqUrl = sqs.createQueue(client, sqsName(queueUrl) + "-dlq", Map.of());
    cleanup.add(() -> {
      sqs.deleteQueue(client, dlqUrl);
      client.close();
    });
    String poison = key(3);
    int maxAttempts = 3;
    int deaths = 0;
    while (true) {
      ChildJvm run = child("run-" + deaths, "sqs", sqsName(queueUrl), null, 0,
          "-Dtest.poison=" + poison, "-Didem.retry.max-attempts=" + maxAttempts);
      try (run) {
        await("the application dies or dead-letters the poison").atMost(WAIT).until(() ->
            !run.isAlive() || sqsMessages(dlqUrl) > 0);
        if (run.isAlive()) {
          try {
            await("every other event applied and the queue drained").atMost(WAIT).untilAsserted(() -> {
              assertThat(run.isAlive()).as("alive").isTrue();
              assertThat(distinct()).isEqualTo(EVENTS - 1);
              assertThat(sqsMessages(queueUrl)).isZero();
            });
          } catch (RuntimeException | AssertionError e) {
            System.out.println("the application's output (dead letters " + sqsMessages(dlqUrl) + ", on the queue " + sqsMessages(queueUrl) + "):\n"
                + String.join("\n", run.lines()));
            throw e;
          }
          break;
        }
      }
      deaths++;
      assertThat(deaths).as("process deaths of the poison message").isLessThanOrEqualTo(maxAttempts);
    }
    assertThat(deaths).as("process deaths of the poison message").isEqualTo(maxAttempts);
    assertThat(count(poison)).isZero();
    assertThat(total()).isEqualTo(EVENTS - 1);
    assertThat(doubled()).isZero();
    var dead = client.receiveMessage(r -> r.queueUrl(dlqUrl).maxNumberOfMessages(10)
        .messageAttributeNames("All").waitTimeSeconds(5)).messages();
    // the poison only, once or (SQS standard queue: docs/FAILURES.md, "The second copy") twice,
    // when it was received again (its visibility timeout ran out on a loaded machine) between the
    // copy and the removal of the original
    assertThat(dead).as("dead letters: the poison only, at most one second copy").hasSizeBetween(1, 2);
    assertThat(dead).allSatisfy(copy -> {
      assertThat(copy.body()).isEqualTo(poison);
      assertThat(copy.messageAttributes().get(io.idem.DeadLetterReason.HEADER_CAUSE).stringValue())
          .isEqualTo("MAX_ATTEMPTS_EXCEEDED");
      assertThat(copy.messageAttributes().get(io.idem.DeadLetterReason.HEADER_KEY).stringValue())
          .isEqualTo(poison);
    });
  }

  @Test
  void jmsListenerHaltedAfterIdemsCommitBeforeTheSessionCommit() {
    String queue = jmsQueueWithEvents();
    String crashedKey = haltAt(CrashPoint.AFTER_COMMIT, "jms", queue);
    // the session did not commit: Artemis has the crashed event back, unacknowledged
    await("the crashed event back on the queue").atMost(WAIT).until(() -> jmsQueueHolds(queue, crashedKey));
    recoverEvery("jms", queue, crashedKey, true, () -> assertThat(ArtemisFixture.shared().messageCount(queue)).isZero());
  }

  @Test
  void jmsListenerHaltedMidHandler() {
    String queue = jmsQueueWithEvents();
    String crashedKey = haltAt(CrashPoint.AFTER_HANDLER, "jms", queue);
    recoverEvery("jms", queue, crashedKey, false, () -> assertThat(ArtemisFixture.shared().messageCount(queue)).isZero());
  }

  @Test
  void sqsListenerHaltedAfterIdemsCommitBeforeTheDelete() {
    String queueUrl = sqsQueueWithEvents();
    String crashedKey = haltAt(CrashPoint.AFTER_COMMIT, "sqs", sqsName(queueUrl));
    recoverEvery("sqs", sqsName(queueUrl), crashedKey, true, () -> assertThat(sqsMessages(queueUrl)).isZero());
  }

  @Test
  void sqsListenerHaltedMidHandler() {
    String queueUrl = sqsQueueWithEvents();
    String crashedKey = haltAt(CrashPoint.AFTER_HANDLER, "sqs", sqsName(queueUrl));
    recoverEvery("sqs", sqsName(queueUrl), crashedKey, false, () -> assertThat(sqsMessages(queueUrl)).isZero());
  }

  /**
   * Runs the application until it halts at {@code point} of the {@value #CRASH_AFTER}th event it
   * reaches there (several run at once on SQS): after Idem's commit its row is there, mid-handler
   * (the handler wrote, nothing committed) it is not.
   *
   * @return the crashed event's key
   */
  private String haltAt(CrashPoint point, String broker, String source) {
    String crashedKey;
    try (ChildJvm victim = child("victim", broker, source, point, 0)) {
      crashedKey = plannedCrash(victim, point);
    }
    assertThat(count(crashedKey)).as("rows of the crashed event").isEqualTo(point == CrashPoint.AFTER_COMMIT ? 1 : 0);
    assertThat(doubled()).isZero();
    return crashedKey;
  }

  /**
   * Restarts the application without a crash point until every event is applied and the broker
   * holds none: every row exactly once; the crashed event skipped as a duplicate when it had
   * committed, applied by the survivor when it had not; nothing retried or dead-lettered.
   */
  private void recoverEvery(String broker, String source, String crashedKey, boolean committed,
      ThrowingRunnable drained) {
    try (ChildJvm survivor = child("survivor", broker, source, null, 0)) {
      await("every event applied and settled").atMost(WAIT).untilAsserted(() -> {
        assertThat(survivor.isAlive()).as("survivor alive").isTrue();
        assertThat(distinct()).isEqualTo(EVENTS);
        drained.run();
      });
      assertThat(total()).isEqualTo(EVENTS);
      assertThat(doubled()).isZero();
      List<String> outcomes = survivor.lines().stream().filter(l -> l.startsWith("IDEM-OUTCOME ")).toList();
      assertThat(outcomes).allMatch(l -> l.startsWith("IDEM-OUTCOME PROCESSED ") || l.startsWith("IDEM-OUTCOME DUPLICATE "));
      assertThat(outcomes).contains((committed ? "IDEM-OUTCOME DUPLICATE " : "IDEM-OUTCOME PROCESSED ") + crashedKey);
    }
  }

  private String jmsQueueWithEvents() {
    String queue = "spring-crash-" + UUID.randomUUID();
    ArtemisFixture artemis = ArtemisFixture.shared();
    artemis.createQueue(queue);
    cleanup.add(() -> artemis.deleteQueue(queue));
    try (jakarta.jms.JMSContext context = artemis.connectionFactory().createContext()) {
      jakarta.jms.JMSProducer producer = context.createProducer();
      for (int i = 0; i < EVENTS; i++) {
        producer.setProperty("idempotency_key", key(i)).send(context.createQueue(queue), key(i));
      }
    }
    return queue;
  }

  /** Whether a browser sees {@code key}'s message on {@code queue}. */
  private static boolean jmsQueueHolds(String queue, String key) {
    try (jakarta.jms.JMSContext context = ArtemisFixture.shared().connectionFactory().createContext();
        jakarta.jms.QueueBrowser browser = context.createBrowser(context.createQueue(queue))) {
      java.util.Enumeration<?> messages = browser.getEnumeration();
      while (messages.hasMoreElements()) {
        if (key.equals(((jakarta.jms.Message) messages.nextElement()).getBody(String.class))) {
          return true;
        }
      }
      return false;
    } catch (jakarta.jms.JMSException e) {
      throw new AssertionError("could not browse " + queue, e);
    }
  }

  private String sqsQueueWithEvents() {
    SqsFixture sqs = SqsFixture.shared();
    software.amazon.awssdk.services.sqs.SqsClient client = sqs.newClient();
    String url = sqs.createQueue(client, "spring-crash-" + UUID.randomUUID(), Map.of());
    cleanup.add(() -> {
      sqs.deleteQueue(client, url);
      client.close();
    });
    for (int i = 0; i < EVENTS; i++) {
      String key = key(i);
      client.sendMessage(r -> r.queueUrl(url).messageBody(key).messageAttributes(Map.of("idempotency-key",
          software.amazon.awssdk.services.sqs.model.MessageAttributeValue.builder().dataType("String").stringValue(key).build())));
    }
    return url;
  }

  private static String sqsName(String queueUrl) {
    return queueUrl.substring(queueUrl.lastIndexOf('/') + 1);
  }

  /** Messages on the queue, visible or in flight. */
  private static long sqsMessages(String queueUrl) {
    try (software.amazon.awssdk.services.sqs.SqsClient client = SqsFixture.shared().newClient()) {
      Map<software.amazon.awssdk.services.sqs.model.QueueAttributeName, String> attributes = client.getQueueAttributes(r -> r
          .queueUrl(queueUrl).attributeNames(
              software.amazon.awssdk.services.sqs.model.QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
              software.amazon.awssdk.services.sqs.model.QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE))
          .attributes();
      return attributes.values().stream().mapToLong(Long::parseLong).sum();
    }
  }

  /**
   * Restarts the application without a crash point and waits until every event is applied and
   * the broker settled them all: then every event's row is there exactly once, and the restarted
   * application skipped exactly {@code duplicates} events (applied, not acknowledged), {@code
   * crashedKey} among them.
   */
  private void recover(String broker, String source, long duplicates, String crashedKey, ThrowingRunnable settled) {
    try (ChildJvm survivor = child("survivor", broker, source, null, 0)) {
      await("every event applied and settled").atMost(WAIT).untilAsserted(() -> {
        assertThat(survivor.isAlive()).as("survivor alive").isTrue();
        assertThat(distinct()).isEqualTo(EVENTS);
        settled.run();
      });
      assertThat(total()).isEqualTo(EVENTS);
      assertThat(doubled()).isZero();
      List<String> skipped = survivor.lines().stream()
          .filter(l -> l.startsWith("IDEM-OUTCOME DUPLICATE ")).toList();
      assertThat(skipped).as("skipped as duplicates").hasSize((int) duplicates);
      if (crashedKey != null) {
        assertThat(skipped).contains("IDEM-OUTCOME DUPLICATE " + crashedKey);
      }
    }
  }

  /**
   * Runs the application until it halts at the AFTER_COMMIT of event {@value #CRASH_AFTER}, and
   * checks that Idem's commit happened: the crashed event's row is there, and every one before it.
   *
   * @return the crashed event's key
   */
  private String haltAfterIdemsCommit(String broker, String source) {
    String crashedKey;
    try (ChildJvm victim = child("victim", broker, source, CrashPoint.AFTER_COMMIT, 0)) {
      crashedKey = plannedCrash(victim, CrashPoint.AFTER_COMMIT);
    }
    assertThat(crashedKey).isEqualTo(key(CRASH_AFTER));
    assertThat(count(crashedKey)).isEqualTo(1);
    assertThat(total()).isEqualTo(CRASH_AFTER + 1);
    return crashedKey;
  }

  private static String plannedCrash(ChildJvm victim, CrashPoint point) {
    int status = victim.waitFor(WAIT);
    assertThat(status).as("exit status; output: %s", victim.lines()).isEqualTo(CrashInjector.EXIT_STATUS);
    String prefix = "IDEM-CRASH " + point + " ";
    return victim.lines().stream().filter(l -> l.startsWith(prefix)).findFirst()
        .map(l -> l.substring(prefix.length()).trim())
        .orElseThrow(() -> new AssertionError("no IDEM-CRASH line: " + victim.lines()));
  }

  /** A topic of one partition holding the events in order: event {@code i} at offset {@code i}. */
  private String kafkaTopicWithEvents() {
    String topic = "spring-crash-" + UUID.randomUUID();
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(topic, 1);
    cleanup.add(() -> {
      kafka.deleteConsumerGroup(topic + "-app");
      kafka.deleteTopic(topic);
    });
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
        "bootstrap.servers", kafka.bootstrapServers(), "acks", "all"),
        new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < EVENTS; i++) {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key(i), key(i));
        record.headers().add("idempotency-key", key(i).getBytes(StandardCharsets.UTF_8));
        producer.send(record).get(30, TimeUnit.SECONDS);
      }
    } catch (Exception e) {
      throw new AssertionError("could not publish to " + topic, e);
    }
    return topic;
  }

  /** The end offset of partition 0 of {@code topic}: how many records it holds. */
  private static long endOffset(String topic) {
    try {
      TopicPartition partition = new TopicPartition(topic, 0);
      return KafkaFixture.shared().admin().listOffsets(Map.of(partition, OffsetSpec.latest()))
          .partitionResult(partition).get(30, TimeUnit.SECONDS).offset();
    } catch (Exception e) {
      throw new AssertionError("could not read the end offset of " + topic, e);
    }
  }

  /** Every record of partition 0 of {@code topic}, from the beginning to its end offset. */
  private static List<ConsumerRecord<String, String>> records(String topic) {
    long end = endOffset(topic);
    TopicPartition partition = new TopicPartition(topic, 0);
    List<ConsumerRecord<String, String>> read = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
        "bootstrap.servers", KafkaFixture.shared().bootstrapServers(), "enable.auto.commit", "false"),
        new StringDeserializer(), new StringDeserializer())) {
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      await("the records of " + topic).atMost(WAIT).until(() -> {
        consumer.poll(Duration.ofMillis(500)).forEach(read::add);
        return consumer.position(partition) >= end;
      });
    }
    return read;
  }

  private static long committedOffset(String topic) {
    try {
      Map<?, OffsetAndMetadata> offsets = KafkaFixture.shared().admin()
          .listConsumerGroupOffsets(topic + "-app").partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      return offsets.values().stream().filter(o -> o != null).mapToLong(OffsetAndMetadata::offset).sum();
    } catch (Exception e) {
      throw new AssertionError("could not read the offsets of " + topic, e);
    }
  }

  private ChildJvm child(String name, String broker, String source, CrashPoint point, long handlerDelayMillis,
      String... extra) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvmArgs = new ArrayList<>(List.of(extra));
    jvmArgs.addAll(List.of(
        "-Xmx256m",
        "-Dtest.broker=" + broker,
        "-Dtest.source=" + source,
        "-Dtest.handler-delay=" + handlerDelayMillis,
        "-Dspring.datasource.url=" + postgres.jdbcUrl(),
        "-Dspring.datasource.username=" + postgres.user(),
        "-Dspring.datasource.password=" + postgres.password(),
        "-Dspring.datasource.hikari.schema=" + database.getSchema(),
        "-Didem.retention.enabled=false",
        "-Dlogging.level.root=WARN",
        // the redeliveries Idem asks for are none here; the halted consumer's leftovers are expected
        "-Dlogging.level.org.apache.kafka=ERROR",
        "-Dspring.kafka.bootstrap-servers=" + KafkaFixture.shared().bootstrapServers(),
        "-Dspring.kafka.consumer.auto-offset-reset=earliest",
        // the halted member stays in the group until its session times out (default 45 s)
        "-Dspring.kafka.consumer.properties[session.timeout.ms]=6000",
        "-Dspring.kafka.consumer.properties[heartbeat.interval.ms]=500"));
    DropInTestSupport.rabbitProperties().forEach((k, v) -> jvmArgs.add("-D" + k + "=" + v));
    if (broker.equals("jms")) {
      ArtemisFixture artemis = ArtemisFixture.shared();
      jvmArgs.add("-Dtest.artemis.url=" + artemis.url());
      jvmArgs.add("-Dtest.artemis.user=" + (artemis.user() == null ? "" : artemis.user()));
      jvmArgs.add("-Dtest.artemis.password=" + (artemis.password() == null ? "" : artemis.password()));
    }
    if (broker.equals("sqs")) {
      SqsFixture sqs = SqsFixture.shared();
      jvmArgs.addAll(List.of("-Dspring.cloud.aws.sqs.enabled=true",
          "-Dspring.cloud.aws.sqs.endpoint=" + sqs.endpoint(),
          "-Dspring.cloud.aws.region.static=" + sqs.region(),
          "-Dspring.cloud.aws.credentials.access-key=idem",
          "-Dspring.cloud.aws.credentials.secret-key=idem",
          "-Dlogging.level.io.awspring.cloud.sqs=ERROR"));
    }
    if (point != null) {
      jvmArgs.add("-Didem.crash.point=" + point.name());
      jvmArgs.add("-Didem.crash.after=" + CRASH_AFTER);
    }
    // output kept for the assertions, printed only in their messages
    return ChildJvm.start(name, SpringCrashChild.class, jvmArgs, List.of(), Map.of(), line -> { });
  }

  private static String key(int i) {
    return String.format("e-%02d", i);
  }

  private long count(String key) {
    return jdbc.queryForObject("SELECT count(*) FROM effects WHERE id = ?", Long.class, key);
  }

  private long total() {
    return jdbc.queryForObject("SELECT count(*) FROM effects", Long.class);
  }

  private long distinct() {
    return jdbc.queryForObject("SELECT count(DISTINCT id) FROM effects", Long.class);
  }

  private long doubled() {
    return jdbc.queryForObject(
        "SELECT count(*) FROM (SELECT id FROM effects GROUP BY id HAVING count(*) > 1) d", Long.class);
  }

  private static void deleteQueue(String queue) {
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("spring-crash-cleanup");
        Channel channel = connection.createChannel()) {
      channel.queueDelete(queue);
    } catch (Exception e) {
      throw new IllegalStateException("could not delete queue " + queue, e);
    }
  }
}
