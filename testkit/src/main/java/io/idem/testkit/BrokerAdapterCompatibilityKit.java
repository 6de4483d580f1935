package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.ProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The behaviour every broker adapter must show, run against its real broker and a real
 * PostgreSQL. An adapter module extends it in a few lines:
 *
 * <pre>{@code
 * class KafkaAdapterCompatibilityIT extends BrokerAdapterCompatibilityKit {
 *   protected DataSource dataSource() { return PostgresFixture.shared().dataSource(); }
 *   protected ProcessedEventStore<SqlSession> store(SqlSessionFactory f) {
 *     return MyBatisProcessedEventStore.builder(f).createTableIfMissing(true).build();
 *   }
 *   protected BrokerHarness harness(String name) { return new KafkaHarness(name); }
 * }
 * }</pre>
 *
 * <p>Each test gets a fresh destination from {@link #harness(String)} and a fresh consumer group,
 * and checks effects in a business table written through the handler's {@link SqlSession}.
 */
public abstract class BrokerAdapterCompatibilityKit {

  /** Key header used by every kit message ({@link IdempotencyKeyExtractor#DEFAULT_HEADER}). */
  protected static final String KEY = IdempotencyKeyExtractor.DEFAULT_HEADER;

  /**
   * PostgreSQL for the store and the business table. May return the same instance every time;
   * the kit isolates tests by consumer group and run id.
   */
  protected abstract DataSource dataSource();

  /** The processed-events store under test, on {@code sessions}, with its table present. */
  protected abstract ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions);

  /** A harness on a fresh destination; {@code name} is safe for broker names ([a-z0-9-]). */
  protected abstract BrokerHarness harness(String name);

  /** How long the kit waits for an expected state; default 60 s. */
  protected Duration timeout() {
    return Duration.ofSeconds(60);
  }

  /** The retry policy of kit consumers: 3 attempts, 100 ms fixed backoff, no jitter. */
  protected RetryPolicy retryPolicy() {
    return RetryPolicy.builder()
        .maxAttempts(3)
        .initialBackoff(Duration.ofMillis(100))
        .maxBackoff(Duration.ofMillis(100))
        .multiplier(1.0)
        .jitter(0)
        .build();
  }

  private BrokerHarness broker;
  private ProcessedEventStore<SqlSession> store;
  private KitEffects effects;
  private String group;
  private final OutcomeRecorder outcomes = new OutcomeRecorder();
  private final List<BrokerConsumer> consumers = new ArrayList<>();

  @BeforeEach
  void setUpKit(TestInfo info) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String test = info.getTestMethod().map(m -> m.getName()).orElse("test");
    String name = ("kit-" + test.replaceAll("([a-z])([A-Z])", "$1-$2") + "-" + run).toLowerCase();
    DataSource dataSource = dataSource();
    Configuration configuration =
        new Configuration(new Environment("idem-kit", new JdbcTransactionFactory(), dataSource));
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(configuration);
    store = store(sessions);
    effects = new KitEffects(dataSource, run);
    effects.createTable();
    group = "kit-" + run;
    broker = harness(name.length() > 60 ? name.substring(0, 51) + "-" + run : name);
  }

  @AfterEach
  void tearDownKit() {
    Collections.reverse(consumers);
    for (BrokerConsumer consumer : consumers) {
      consumer.close();
    }
    if (broker != null) {
      broker.close();
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Publishes a message with the kit key header. */
  protected final void publish(String key, String payload) {
    broker.publish(Map.of(KEY, key), payload.getBytes(StandardCharsets.UTF_8));
  }

  /** The handler that writes one effect row per call, joining the dedup transaction. */
  protected final MessageHandler<SqlSession> recordingHandler() {
    return (message, session) -> effects.record(session, keyOf(message), message.payload());
  }

  /** Builds and starts one consumer instance on the test's destination. */
  protected final BrokerConsumer startConsumer(MessageHandler<SqlSession> handler) {
    IdempotentConsumer<SqlSession> pipeline =
        IdempotentConsumer.builder(store)
            .consumerGroup(group)
            .handler(handler)
            .retryPolicy(retryPolicy())
            .listener(outcomes)
            .build();
    BrokerConsumer consumer = broker.newConsumer(pipeline);
    consumers.add(consumer);
    consumer.start();
    return consumer;
  }

  /** Closes every consumer started so far (gracefully), then waits until nothing is pending. */
  protected final void closeConsumersAndAwaitSettled() {
    for (BrokerConsumer consumer : consumers) {
      consumer.close();
    }
    await("messages settled on " + broker.destination())
        .atMost(timeout())
        .untilAsserted(() -> assertThat(broker.pendingCount()).isZero());
  }

  private static String keyOf(InboundMessage message) {
    String key = message.header(KEY);
    return key == null ? "(none)" : key;
  }

  private boolean committed(String key) {
    return store.isProcessed(new IdempotencyKey(group, key, KeySource.HEADER));
  }

  private void awaitEffects(String key, int count) {
    await("effect of " + key)
        .atMost(timeout())
        .untilAsserted(() -> assertThat(effects.count(key)).isEqualTo(count));
  }

  private List<DeadLetteredMessage> awaitDeadLetters(int count) {
    await("dead letters on " + broker.destination())
        .atMost(timeout())
        .untilAsserted(() -> assertThat(broker.deadLetters()).hasSizeGreaterThanOrEqualTo(count));
    return broker.deadLetters();
  }

  // ---- the kit --------------------------------------------------------------------------------

  @Nested
  @DisplayName("delivery")
  class Delivery {

    @Test
    @DisplayName("a duplicate delivery is applied once and acked")
    void duplicateDeliveryIsAppliedOnce() {
      publish("order-1", "{\"order\":1}");
      publish("order-1", "{\"order\":1}");
      publish("order-2", "{\"order\":2}");
      startConsumer(recordingHandler());

      awaitEffects("order-2", 1);
      await().atMost(timeout())
          .until(() -> outcomes.count("order-1", ProcessingOutcome.DUPLICATE) == 1);
      assertThat(effects.count("order-1")).isEqualTo(1);
      assertThat(outcomes.count("order-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
      closeConsumersAndAwaitSettled();
      assertThat(effects.count("order-1")).isEqualTo(1);
    }

    @Test
    @DisplayName("headers and payload bytes survive the round trip")
    void headersAndPayloadSurvive() {
      byte[] payload = new byte[256];
      for (int i = 0; i < payload.length; i++) {
        payload[i] = (byte) i; // every byte value, most of them not UTF-8
      }
      Map<String, String> headers = new LinkedHashMap<>();
      headers.put(KEY, "round-trip-1");
      headers.put("x-unicode", "Zoë ünïcødé ✓ 日本");
      headers.put("x-empty", "");
      broker.publish(headers, payload);
      List<InboundMessage> seen = new CopyOnWriteArrayList<>();
      startConsumer((message, session) -> {
        seen.add(message);
        effects.record(session, keyOf(message), message.payload());
      });

      awaitEffects("round-trip-1", 1);
      InboundMessage message = seen.get(0);
      assertThat(message.payload()).containsExactly(payload);
      assertThat(message.headers()).containsAllEntriesOf(headers);
      assertThat(message.source()).isEqualTo(broker.destination());
      assertThat(message.deliveryAttempt()).isEqualTo(1);
      assertThat(message.receivedAt()).isNotNull();
      closeConsumersAndAwaitSettled();
    }
  }

  @Nested
  @DisplayName("failure")
  class Failure {

    @Test
    @DisplayName("a failing handler rolls back marker and effect, is redelivered, then succeeds")
    void handlerFailureRollsBackAndIsRedelivered() {
      publish("flaky-1", "{\"order\":1}");
      AtomicInteger calls = new AtomicInteger();
      List<String> seenBeforeRetry = new CopyOnWriteArrayList<>();
      startConsumer((message, session) -> {
        int call = calls.incrementAndGet();
        if (call > 1) {
          // what the first attempt left behind, seen from outside its transaction
          seenBeforeRetry.add("marker=" + committed("flaky-1") + ",effects=" + effects.count("flaky-1"));
        }
        effects.record(session, keyOf(message), message.payload());
        if (call == 1) {
          throw new IllegalStateException("simulated failure after the business write");
        }
      });

      awaitEffects("flaky-1", 1);
      assertThat(seenBeforeRetry).first().isEqualTo("marker=false,effects=0");
      assertThat(outcomes.count("flaky-1", ProcessingOutcome.RETRY)).isEqualTo(1);
      assertThat(outcomes.count("flaky-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
      closeConsumersAndAwaitSettled();
      assertThat(effects.count("flaky-1")).isEqualTo(1);
      assertThat(broker.deadLetters()).isEmpty();
    }

    @Test
    @DisplayName("past max attempts the message is dead-lettered with the reason")
    void deadLettersAfterMaxAttempts() {
      publish("poison-1", "{\"poison\":true}");
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        calls.incrementAndGet();
        effects.record(session, keyOf(message), message.payload());
        throw new IllegalStateException("always fails");
      });

      List<DeadLetteredMessage> dead = awaitDeadLetters(1);
      assertThat(dead).hasSize(1);
      DeadLetteredMessage letter = dead.get(0);
      assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
      assertThat(letter.detail()).contains("always fails");
      assertThat(letter.headers())
          .containsEntry(KEY, "poison-1")
          .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, group)
          .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName());
      assertThat(new String(letter.payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
      assertThat(calls.get()).isEqualTo(retryPolicy().maxAttempts());
      closeConsumersAndAwaitSettled();
      assertThat(effects.count("poison-1")).isZero();
      assertThat(committed("poison-1")).isFalse();
    }

    @Test
    @DisplayName("a message without a key is dead-lettered, never handled")
    void messageWithoutKeyIsDeadLettered() {
      broker.publish(Map.of("x-other", "1"), "{\"no\":\"key\"}".getBytes(StandardCharsets.UTF_8));
      publish("after-keyless", "{}");
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        calls.incrementAndGet();
        effects.record(session, keyOf(message), message.payload());
      });

      List<DeadLetteredMessage> dead = awaitDeadLetters(1);
      assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.NO_KEY.name());
      assertThat(dead.get(0).detail()).contains(KEY);
      assertThat(dead.get(0).headers()).containsEntry("x-other", "1");
      awaitEffects("after-keyless", 1);
      assertThat(calls.get()).isEqualTo(1);
      closeConsumersAndAwaitSettled();
    }

    @Test
    @DisplayName("the same key with another payload is a conflict: dead-lettered, not applied")
    void conflictingPayloadIsDeadLettered() {
      publish("conflict-1", "{\"amount\":10}");
      publish("conflict-1", "{\"amount\":99}");
      startConsumer(recordingHandler());

      List<DeadLetteredMessage> dead = awaitDeadLetters(1);
      assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.CONFLICT.name());
      assertThat(effects.count("conflict-1")).isEqualTo(1);
      assertThat(outcomes.count("conflict-1", ProcessingOutcome.CONFLICT)).isEqualTo(1);
      closeConsumersAndAwaitSettled();
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("two consumer instances on the same keys apply each effect once")
    void twoConsumersApplyEachKeyOnce() {
      int keys = 100;
      startConsumer(recordingHandler());
      startConsumer(recordingHandler());
      for (int round = 0; round < 2; round++) {
        for (int i = 0; i < keys; i++) {
          publish("k-" + i, "{\"n\":" + i + "}");
        }
      }

      await("all effects").atMost(timeout()).untilAsserted(() -> assertThat(effects.total()).isEqualTo(keys));
      // the second copies may still be queued when every key is applied; a graceful close would
      // return them unacknowledged, so wait until every delivery was settled before closing
      await("all deliveries settled").atMost(timeout()).until(() ->
          outcomes.count(ProcessingOutcome.PROCESSED) + outcomes.count(ProcessingOutcome.DUPLICATE) >= 2L * keys);
      closeConsumersAndAwaitSettled();
      assertThat(effects.total()).isEqualTo(keys);
      assertThat(effects.doubled()).isZero();
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(keys);
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED) + outcomes.count(ProcessingOutcome.DUPLICATE))
          .isGreaterThanOrEqualTo(2L * keys);
    }
  }
}
