package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
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
import io.idem.NonRetryableException;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.jspecify.annotations.Nullable;

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

  /**
   * The crash matrix's consumer factory ({@link CrashMatrix}): it starts this adapter in the
   * child JVM on {@link CrashMatrixContext#destination()} with {@link
   * CrashMatrixContext#kitPipeline} on the adapter's store, configured as this subclass's variant
   * (queue type, FIFO, batch size, group protocol: pass it in {@link #crashProperties}). Every
   * variant of a real broker returns one: the four adapters run the matrix in each of their kit
   * subclasses (Kafka on both group protocols, RabbitMQ classic and quorum, SQS standard and FIFO
   * per message and in batches, JMS). Default {@code null} leaves the crash tests out (aborted,
   * with that reason), which is only right where a child JVM cannot be crashed against the broker
   * at all — an in-memory broker inside the test JVM (the testkit's own {@code FakeBroker}), which
   * dies with it; run such a kit without the {@value #CRASH_MATRIX_TAG} tag. The factory must hook
   * the adapter's broker calls for {@link CrashPoint#DEAD_LETTER_COPY_STORED} (and, with {@link
   * CrashMatrix.Builder#interceptedBrokerCalls}, DURING_ACK): see {@link CrashMatrix.Builder#points}.
   */
  protected @Nullable Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return null;
  }

  /**
   * Properties the crash matrix's child needs for a point's destination (broker address, queue
   * URL), read there with {@link CrashMatrixContext#property}; {@code harness} is the point's
   * fresh harness from {@link #harness(String)}. Default none.
   */
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    return Map.of();
  }

  /**
   * The database of the crash matrix's child: by default URL, user and schema of {@link
   * #dataSource()} with no password; override where a password is needed.
   */
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource(), "");
  }

  /**
   * The crash matrix runner the crash tests use, tuned by the subclass (for example {@link
   * CrashMatrix.Builder#interceptedBrokerCalls}); the default returns {@code matrix} unchanged.
   */
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return matrix;
  }

  /** How long the kit waits for an expected state; default 60 s. */
  protected Duration timeout() {
    return Duration.ofSeconds(60);
  }

  /**
   * How long {@code close()} is watched while a handler provably runs; a close that returns within
   * it did not wait for the work. Default 1 s; must stay below the adapter's shutdown timeout.
   */
  protected Duration closeWaitWindow() {
    return Duration.ofSeconds(1);
  }

  private static boolean completesWithin(CompletableFuture<?> future, Duration window) {
    try {
      future.get(window.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (java.util.concurrent.TimeoutException stillRunning) {
      return false;
    } catch (Exception e) {
      throw new IllegalStateException("close() failed: " + e, e);
    }
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
  private SwitchableStore<SqlSession> store;
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
    store = new SwitchableStore<>(store(sessions));
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
    return startConsumer(handler, retryPolicy());
  }

  /** Builds and starts one consumer instance on the test's destination, with {@code policy}. */
  protected final BrokerConsumer startConsumer(MessageHandler<SqlSession> handler, RetryPolicy policy) {
    BrokerConsumer consumer = newConsumer(handler, policy);
    consumer.start();
    return consumer;
  }

  private BrokerConsumer newConsumer(MessageHandler<SqlSession> handler, RetryPolicy policy) {
    IdempotentConsumer<SqlSession> pipeline =
        IdempotentConsumer.builder(store)
            .consumerGroup(group)
            .handler(handler)
            .retryPolicy(policy)
            .listener(outcomes)
            .build();
    BrokerConsumer consumer = broker.newConsumer(pipeline);
    consumers.add(consumer);
    return consumer;
  }

  /** The store the kit's consumers use: the adapter's store, with outages and failed commits to switch on. */
  protected final SwitchableStore<SqlSession> switchableStore() {
    return store;
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

  /**
   * Waits for {@code count} outcomes of a kind for a key, then asserts there are exactly that many.
   * An adapter reports an outcome after the transaction commits, so an effect can be visible to the
   * test a moment before its outcome is: an outcome is awaited, never read right after an effect.
   */
  private void awaitOutcomes(String key, ProcessingOutcome outcome, long count) {
    await(outcome + " outcomes of " + key)
        .atMost(timeout())
        .until(() -> outcomes.count(key, outcome) >= count);
    assertThat(outcomes.count(key, outcome)).as(outcome + " outcomes of " + key).isEqualTo(count);
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
      awaitOutcomes("flaky-1", ProcessingOutcome.RETRY, 1);
      awaitOutcomes("flaky-1", ProcessingOutcome.PROCESSED, 1);
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
      // the reason names the key as the broker spells it: JMS property names cannot hold '-'
      assertThat(dead.get(0).detail()).containsAnyOf(KEY, KEY.replace('-', '_'));
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
      awaitOutcomes("conflict-1", ProcessingOutcome.CONFLICT, 1);
      closeConsumersAndAwaitSettled();
    }
  }

  @Nested
  @DisplayName("settlement")
  class Settlement {

    @Test
    @DisplayName("a commit that fails after the handler ran is not acked: the message comes back and is applied once")
    void failedCommitIsNotAcked() {
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        calls.incrementAndGet();
        effects.record(session, keyOf(message), message.payload());
      });
      switchableStore().failNextCommits(1); // after start: the next transaction is this message's
      publish("commit-1", "{\"order\":1}");

      awaitEffects("commit-1", 1);
      assertThat(calls.get()).as("handler runs: the rolled back one and the redelivery").isEqualTo(2);
      awaitOutcomes("commit-1", ProcessingOutcome.RETRY, 1);
      awaitOutcomes("commit-1", ProcessingOutcome.PROCESSED, 1);
      closeConsumersAndAwaitSettled();
      assertThat(effects.count("commit-1")).isEqualTo(1);
      assertThat(broker.deadLetters()).isEmpty();
    }

    @Test
    @DisplayName("a store outage longer than maxAttempts is not counted: the message is applied, not dead-lettered")
    void storeOutageIsNotAnAttempt() {
      int attempts = retryPolicy().maxAttempts();
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        // after the outage the handler still fails attempts - 1 times: had any return of the
        // outage been counted, the last call would be past maxAttempts and dead-lettered
        if (calls.incrementAndGet() < attempts) {
          throw new IllegalStateException("handler failure " + calls.get());
        }
        effects.record(session, keyOf(message), message.payload());
      });
      switchableStore().failNextTransactions(attempts + 1); // after start: this message's transactions
      publish("outage-1", "{\"order\":1}");

      awaitEffects("outage-1", 1);
      assertThat(switchableStore().refusedTransactions()).as("the outage took place").isEqualTo(attempts + 1);
      awaitOutcomes("outage-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE, attempts + 1);
      assertThat(calls.get()).isEqualTo(attempts);
      closeConsumersAndAwaitSettled();
      assertThat(broker.deadLetters()).isEmpty();
      assertThat(outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isZero();
    }

    @Test
    @DisplayName("a retry is delivered again no sooner than the backoff")
    void retryDelayIsHonoured() {
      Duration backoff = Duration.ofSeconds(1);
      RetryPolicy slow = RetryPolicy.builder().maxAttempts(3).initialBackoff(backoff).maxBackoff(backoff)
          .multiplier(1.0).jitter(0).build();
      publish("slow-1", "{}");
      List<Long> calledAt = new CopyOnWriteArrayList<>();
      startConsumer((message, session) -> {
        calledAt.add(System.nanoTime());
        if (calledAt.size() == 1) {
          throw new IllegalStateException("first attempt fails");
        }
        effects.record(session, keyOf(message), message.payload());
      }, slow);

      awaitEffects("slow-1", 1);
      assertThat(calledAt).hasSize(2);
      assertThat(Duration.ofNanos(calledAt.get(1) - calledAt.get(0)))
          .as("from the failed attempt's start to the retry's").isGreaterThanOrEqualTo(backoff);
      closeConsumersAndAwaitSettled();
    }
  }

  @Nested
  @DisplayName("dead letters")
  class DeadLetters {

    @Test
    @DisplayName("an invalid key (longer than 512 characters) is dead-lettered with its reason, never handled")
    void invalidKeyIsDeadLettered() {
      String tooLong = "x".repeat(IdempotencyKey.MAX_LENGTH + 1);
      publish(tooLong, "{\"bad\":\"key\"}");
      publish("after-invalid", "{}");
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        calls.incrementAndGet();
        effects.record(session, keyOf(message), message.payload());
      });

      List<DeadLetteredMessage> dead = awaitDeadLetters(1);
      assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.INVALID_KEY.name());
      assertThat(dead.get(0).detail()).isNotBlank().contains(String.valueOf(IdempotencyKey.MAX_LENGTH));
      assertThat(new String(dead.get(0).payload(), StandardCharsets.UTF_8)).isEqualTo("{\"bad\":\"key\"}");
      awaitEffects("after-invalid", 1);
      assertThat(calls.get()).isEqualTo(1);
      closeConsumersAndAwaitSettled();
      assertThat(effects.count(tooLong)).isZero();
    }

    @Test
    @DisplayName("a non-retryable failure is dead-lettered at once with its reason, nothing applied")
    void nonRetryableIsDeadLetteredAtOnce() {
      publish("fatal-1", "{\"amount\":-1}");
      AtomicInteger calls = new AtomicInteger();
      startConsumer((message, session) -> {
        calls.incrementAndGet();
        effects.record(session, keyOf(message), message.payload());
        throw new NonRetryableException("amount must be positive");
      });

      List<DeadLetteredMessage> dead = awaitDeadLetters(1);
      DeadLetteredMessage letter = dead.get(0);
      assertThat(letter.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
      assertThat(letter.detail()).contains("amount must be positive");
      assertThat(letter.headers())
          .containsEntry(KEY, "fatal-1")
          .containsEntry(DeadLetterReason.HEADER_EXCEPTION, NonRetryableException.class.getName());
      closeConsumersAndAwaitSettled();
      assertThat(calls.get()).as("no retry of a non-retryable failure").isEqualTo(1);
      assertThat(effects.count("fatal-1")).isZero();
      assertThat(committed("fatal-1")).isFalse();
      assertThat(broker.deadLetters()).hasSize(1);
    }
  }

  @Nested
  @DisplayName("close")
  class Close {

    @Test
    @DisplayName("close() with a message in flight lets it finish and acks it; close is idempotent; a new instance goes on")
    void closeWithWorkInFlight() throws Exception {
      publish("in-flight-1", "{}");
      CountDownLatch entered = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      BrokerConsumer first = startConsumer((message, session) -> {
        effects.record(session, keyOf(message), message.payload());
        if ("in-flight-1".equals(keyOf(message))) {
          entered.countDown();
          release.await();
        }
      });
      assertThat(entered.await(timeout().toMillis(), TimeUnit.MILLISECONDS)).as("the handler runs").isTrue();
      CompletableFuture<Void> closing = CompletableFuture.runAsync(first::close);
      // the handler provably runs (it waits for `release`): a close() that returns within this
      // window did not wait for its work. The window only bounds how long a wrong adapter is given
      // to show itself; a right one blocks all of it (graceful close waits for the work)
      boolean closedWhileRunning = completesWithin(closing, closeWaitWindow());
      release.countDown();
      assertThat(closedWhileRunning).as("close() returned while the handler was still running").isFalse();
      closing.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
      assertThat(first.isRunning()).isFalse();
      assertThat(outcomes.count("in-flight-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
      first.close(); // idempotent: returns, throws nothing
      assertThatThrownBy(first::start).as("a closed instance does not start again")
          .isInstanceOf(IllegalStateException.class);
      await("the in-flight message acked at close").atMost(timeout())
          .untilAsserted(() -> assertThat(broker.pendingCount()).isZero());

      publish("after-restart", "{}");
      startConsumer(recordingHandler());
      awaitEffects("after-restart", 1);
      closeConsumersAndAwaitSettled();
      assertThat(effects.count("in-flight-1")).isEqualTo(1);
      assertThat(outcomes.count("in-flight-1", ProcessingOutcome.DUPLICATE)).isZero();
    }
  }

  /** The crash tests' JUnit tag, {@value}: {@code -Dgroups=crash-matrix} runs only them. */
  public static final String CRASH_MATRIX_TAG = "crash-matrix";

  @Nested
  @Tag(CRASH_MATRIX_TAG)
  @DisplayName("crashes (child JVM halted at a point, restarted; the broker outlives it)")
  class Crashes {

    private void runMatrix(List<CrashPoint> points, boolean poison) {
      Class<? extends CrashMatrixConsumerFactory> factory = crashConsumerFactory();
      // a kit subclass without a factory (a broker living in the test JVM, which cannot outlive a
      // crashed child) runs the kit without the crash-matrix tag; reaching here without one fails
      if (factory == null) {
        throw new IllegalStateException("no crashConsumerFactory(): this kit subclass cannot run the crash"
            + " matrix; run it without the tag '" + CRASH_MATRIX_TAG + "' (see crashConsumerFactory())");
      }
      DataSource dataSource = dataSource();
      CrashMatrix.Builder matrix = CrashMatrix.builder(factory)
          .harness(BrokerAdapterCompatibilityKit.this::harness)
          .effects((run, key) -> new KitEffects(dataSource, run).count(key))
          .jdbc(crashJdbc())
          .properties(BrokerAdapterCompatibilityKit.this::crashProperties)
          .maxAttempts(retryPolicy().maxAttempts())
          .timeout(timeout())
          .points(points.toArray(CrashPoint[]::new))
          .poisonMessage(poison);
      crashMatrix(matrix).run().assertPassed();
    }

    @Test
    @DisplayName("killed before the claim: every key applied exactly once")
    void crashBeforeClaim() {
      runMatrix(List.of(CrashPoint.BEFORE_CLAIM), false);
    }

    @Test
    @DisplayName("killed after the handler wrote, before the commit: every key applied exactly once")
    void crashAfterHandler() {
      runMatrix(List.of(CrashPoint.AFTER_HANDLER), false);
    }

    @Test
    @DisplayName("killed after the commit, before the ack: every key applied exactly once")
    void crashAfterCommit() {
      runMatrix(List.of(CrashPoint.AFTER_COMMIT), false);
    }

    @Test
    @DisplayName("killed during the ack: every key applied exactly once")
    void crashDuringAck() {
      runMatrix(List.of(CrashPoint.DURING_ACK), false);
    }

    @Test
    @DisplayName("killed after the dead-letter copy was stored, before the original was removed: dead-lettered, never applied, the others applied once")
    void crashAfterDeadLetterCopyStored() {
      runMatrix(List.of(CrashPoint.DEAD_LETTER_COPY_STORED), false);
    }

    @Test
    @DisplayName("a process-killing message is dead-lettered after at most maxAttempts deaths, the others applied once")
    void processKillingMessage() {
      runMatrix(List.of(), true);
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("two consumer instances on the same keys, both consuming, apply each effect once")
    void twoConsumersApplyEachKeyOnce() {
      int perRound = 50;
      Map<String, AtomicInteger> handledBy = new java.util.concurrent.ConcurrentHashMap<>();
      List<BrokerConsumer> instances = new ArrayList<>();
      for (String instance : List.of("first", "second")) {
        instances.add(startConsumer((message, session) -> {
          effects.record(session, keyOf(message), message.payload());
          handledBy.computeIfAbsent(instance, i -> new AtomicInteger()).incrementAndGet();
        }));
      }
      // both consume something (Kafka: each owns partitions once the group has rebalanced)
      await("both instances consuming").atMost(timeout()).until(() ->
          instances.stream().allMatch(c -> !c.health().consuming().isEmpty()));
      // rounds of keys, each published twice, until both instances have handled messages (a broker
      // may hand everything to the first instance until the second has joined): wait on that event
      int rounds = 0;
      long deadline = System.nanoTime() + timeout().toNanos();
      while (handledBy.size() < 2 && System.nanoTime() < deadline) {
        for (int copy = 0; copy < 2; copy++) {
          for (int i = 0; i < perRound; i++) {
            publish("k-" + rounds + "-" + i, "{\"n\":" + i + "}");
          }
        }
        rounds++;
        int expected = rounds * perRound;
        await("effects of round " + rounds).atMost(timeout())
            .untilAsserted(() -> assertThat(effects.total()).isEqualTo(expected));
      }
      assertThat(handledBy).as("both instances consumed").containsOnlyKeys("first", "second");
      int keys = rounds * perRound;
      // the second copies may still be queued when the last effect lands: close only once every
      // delivery was settled, or the unconsumed copies would stay pending after close
      await("all deliveries settled").atMost(timeout()).until(() ->
          outcomes.count(ProcessingOutcome.PROCESSED) + outcomes.count(ProcessingOutcome.DUPLICATE) >= 2L * keys);
      closeConsumersAndAwaitSettled();
      assertThat(effects.total()).isEqualTo(keys);
      assertThat(effects.doubled()).isZero();
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(keys);
      assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isEqualTo(keys);
    }
  }
}
