package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.AMQP;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.ChildJvm;
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
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
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
      crashedKey = plannedCrash(victim);
    }
    assertThat(crashedKey).isEqualTo(key(CRASH_AFTER));
    assertThat(count(crashedKey)).isEqualTo(1);
    assertThat(total()).isEqualTo(CRASH_AFTER + 1);
    return crashedKey;
  }

  private static String plannedCrash(ChildJvm victim) {
    int status = victim.waitFor(WAIT);
    assertThat(status).as("exit status; output: %s", victim.lines()).isEqualTo(CrashInjector.EXIT_STATUS);
    String prefix = "IDEM-CRASH " + CrashPoint.AFTER_COMMIT + " ";
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

  private static long committedOffset(String topic) {
    try {
      Map<?, OffsetAndMetadata> offsets = KafkaFixture.shared().admin()
          .listConsumerGroupOffsets(topic + "-app").partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      return offsets.values().stream().filter(o -> o != null).mapToLong(OffsetAndMetadata::offset).sum();
    } catch (Exception e) {
      throw new AssertionError("could not read the offsets of " + topic, e);
    }
  }

  private ChildJvm child(String name, String broker, String source, CrashPoint point, long handlerDelayMillis) {
    PostgresFixture postgres = PostgresFixture.shared();
    List<String> jvmArgs = new ArrayList<>(List.of(
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
