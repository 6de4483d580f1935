package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.IdempotentConsumer;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * Batch mode ({@link RabbitConsumerConfig#maxBatchSize()}) on the real broker and PostgreSQL: the
 * messages waiting in the prefetch window run in one transaction; a failing one does not poison
 * its batch; a store outage during a batch costs no attempt and returns nothing to the queue.
 */
class RabbitBatchIT {
  private static final int BATCH = 10;
  private static final int MAX_ATTEMPTS = 3;
  private static final Duration BACKOFF = Duration.ofMillis(200);

  private static RetryPolicy retries() {
    return RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  /**
   * A quorum queue whose {@code x-delivery-limit} equals maxAttempts: RabbitMQ 3.10 counts every
   * return, so a single extra return of the failing message (or any of its batch neighbours) would
   * let the broker dead-letter it without Idem's reason.
   */
  private static TestQueue quorumQueue(String prefix, int deliveryLimit) throws Exception {
    TestQueue queue = TestQueue.undeclared(prefix, RabbitQueueType.QUORUM);
    queue.channel().exchangeDeclare(queue.name + ".dlx", com.rabbitmq.client.BuiltinExchangeType.FANOUT, true);
    queue.channel().queueDeclare(queue.name + ".dlq", true, false, false, Map.of("x-queue-type", "quorum"));
    queue.channel().queueBind(queue.name + ".dlq", queue.name + ".dlx", "");
    queue.channel().queueDeclare(queue.name, true, false, false,
        config(queue, deliveryLimit).queueArguments());
    return queue;
  }

  /** Room for a gate message in flight plus one full batch buffered behind it. */
  private static RabbitConsumerConfig config(TestQueue queue, int deliveryLimit) {
    return queue.configBuilder().deliveryLimit(deliveryLimit).maxBatchSize(BATCH).prefetch(BATCH + 1).build();
  }

  /**
   * Makes the next batch exactly {@code keys}: publishes a gate message whose handler waits until
   * {@code keys} were published and all of them sit in the consumer's buffer, so the worker takes
   * them in one batch when the gate is done. A batch is what is buffered when a worker takes a
   * delivery: without the gate, how many had arrived would be a matter of timing.
   */
  static final class Gate {
    final java.util.concurrent.CountDownLatch open = new java.util.concurrent.CountDownLatch(1);
    final java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);

    /** Call from the handler for the gate message. */
    void pass(io.idem.InboundMessage message) throws InterruptedException {
      if ("gate".equals(message.header("idempotency-key"))) {
        entered.countDown();
        if (!open.await(30, java.util.concurrent.TimeUnit.SECONDS)) {
          throw new IllegalStateException("the gate was never opened");
        }
      }
    }

    void batchBehind(TestQueue queue, RabbitIdempotentConsumer consumer, List<String> keys) throws Exception {
      queue.publish("gate", "{}");
      assertThat(entered.await(30, java.util.concurrent.TimeUnit.SECONDS)).as("gate reached").isTrue();
      for (String key : keys) {
        queue.publish(key, "{}");
      }
      await("the batch buffered behind the gate").atMost(Duration.ofSeconds(30))
          .until(() -> consumer.buffered() == keys.size());
      open.countDown();
    }
  }

  private static List<String> keys(String prefix, int n) {
    List<String> keys = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      keys.add(prefix + i);
    }
    return keys;
  }

  @Test
  void anAlwaysFailingMessageIsRetriedAndDeadLetteredWhileItsBatchIsAppliedOnce() throws Exception {
    try (TestQueue queue = quorumQueue("batch-poison", MAX_ATTEMPTS);
        TestDatabase db = TestDatabase.fresh("rabbit_batch")) {
      Gate gate = new Gate();
      Map<String, List<Long>> transactions = new ConcurrentHashMap<>();
      List<Integer> poisonRuns = new CopyOnWriteArrayList<>();
      Map<String, Long> firstTags = new ConcurrentHashMap<>();
      OutcomeRecorder outcomes = new OutcomeRecorder();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("batch")
          .retryPolicy(retries())
          .listener(outcomes)
          .handler((message, session) -> {
            gate.pass(message);
            String key = String.valueOf(message.header("idempotency-key"));
            transactions.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(transactionId(session));
            firstTags.putIfAbsent(key, message.unwrap(RabbitInboundMessage.class).orElseThrow().deliveryTag());
            if (key.equals("b-5")) {
              poisonRuns.add(message.deliveryAttempt());
              throw new IllegalStateException("b-5 always fails");
            }
            TestDatabase.record(session, key, message.deliveryAttempt());
          })
          .build();

      RecordingConnectionFactory connections = new RecordingConnectionFactory();
      try (RabbitIdempotentConsumer consumer =
          RabbitIdempotentConsumer.create(config(queue, MAX_ATTEMPTS), pipeline, connections)) {
        consumer.start();
        gate.batchBehind(queue, consumer, keys("b-", BATCH));
        await("b-5 dead-lettered").atMost(Duration.ofSeconds(30)).until(() -> !queue.deadLetters().isEmpty());
        await("the others applied").atMost(Duration.ofSeconds(30)).until(() -> db.totalEffects() == BATCH);
      }
      // precondition: b-1..b-5 ran in one transaction (the batch: the handler runs in order and
      // stops at b-5's throw); rolled back, the batch was redone one by one
      long batch = transactions.get("b-1").get(0);
      assertThat(List.of(transactions.get("b-4").get(0), transactions.get("b-5").get(0))).containsOnly(batch);
      assertThat(transactions.get("b-1")).hasSize(2).doesNotHaveDuplicates(); // the batch, then its redo
      assertThat(transactions.get("b-10")).hasSize(1).doesNotContain(batch); // the redo only
      for (int i = 1; i <= BATCH; i++) {
        if (i != 5) {
          assertThat(db.effects("b-" + i)).as("effects of b-" + i).isEqualTo(1);
          assertThat(outcomes.count("b-" + i, ProcessingOutcome.PROCESSED)).isEqualTo(1);
        }
      }
      // its run in the batch was attempt 1 (settled at once, not run again in the redo), then two retries
      assertThat(poisonRuns).containsExactly(1, 2, 3);
      List<DeadLetteredMessage> letters = queue.deadLetters();
      assertThat(letters).hasSize(1); // Idem's copy; no reasonless copy from the broker's limit
      assertThat(letters.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
      assertThat(letters.get(0).detail()).contains("attempt 3 of 3", "b-5 always fails");
      assertThat(db.effects("b-5")).isZero();
      assertThat(queue.ready()).isZero();
      // b-1..b-4 were the channel's lowest unsettled tags: one multiple ack; b-5 was held for its
      // backoff, so b-6..b-10 were acked one by one (a multiple ack up to b-10 would have acked b-5,
      // which then would neither have been retried nor dead-lettered)
      assertThat(multipleAcks(connections)).containsExactly(firstTags.get("b-4"));
      assertThat(singleAcks(connections)).contains(
          firstTags.get("b-6"), firstTags.get("b-7"), firstTags.get("b-8"), firstTags.get("b-9"), firstTags.get("b-10"))
          .doesNotContain(firstTags.get("b-1"), firstTags.get("b-4"), firstTags.get("b-5"));
    }
  }

  /** The tags of the consumer's {@code basicAck(tag, multiple=true)} calls, in order. */
  static List<Long> multipleAcks(RecordingConnectionFactory connections) {
    return acks(connections, true);
  }

  /** The tags of the consumer's {@code basicAck(tag, multiple=false)} calls, in order. */
  static List<Long> singleAcks(RecordingConnectionFactory connections) {
    return acks(connections, false);
  }

  private static List<Long> acks(RecordingConnectionFactory connections, boolean multiple) {
    return connections.ops("basicAck").stream()
        .filter(op -> op.arg(1).equals(multiple))
        .map(op -> (Long) op.arg(0))
        .toList();
  }

  @Test
  void aBatchHandlerWritesTheNewMessagesOfABatchWithOneStatement() throws Exception {
    try (TestQueue queue = quorumQueue("batch-handler", TestQueue.DELIVERY_LIMIT);
        TestDatabase db = TestDatabase.fresh("rabbit_batch")) {
      Gate gate = new Gate();
      List<List<String>> calls = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("batch-handler")
          .batchHandler((messages, session) -> {
            gate.pass(messages.get(0).message());
            calls.add(messages.stream().map(m -> m.key().value()).toList());
            insertAll(session, messages);
          })
          .build();
      List<String> batch = keys("h-", BATCH - 3);
      batch.addAll(List.of("h-1", "h-2", "h-3")); // the same keys again in the same batch
      RecordingConnectionFactory connections = new RecordingConnectionFactory();
      try (RabbitIdempotentConsumer consumer =
          RabbitIdempotentConsumer.create(config(queue, TestQueue.DELIVERY_LIMIT), pipeline, connections)) {
        consumer.start();
        gate.batchBehind(queue, consumer, batch);
        await("all applied").atMost(Duration.ofSeconds(30)).until(() -> db.totalEffects() == 1 + BATCH - 3);
        await("the duplicates acked").atMost(Duration.ofSeconds(30)).until(() -> queue.ready() == 0);
      }
      // the gate alone, then the batch's new messages in one call: one multi-row INSERT
      assertThat(calls).containsExactly(List.of("gate"), keys("h-", BATCH - 3));
      for (int i = 1; i <= BATCH - 3; i++) {
        assertThat(db.effects("h-" + i)).isEqualTo(1);
      }
      assertThat(queue.deadLetters()).isEmpty();
      // the gate's own ack (tag 1), then the whole batch (tags 2..11, its duplicates too) with one multiple ack
      assertThat(singleAcks(connections)).containsExactly(1L);
      assertThat(multipleAcks(connections)).containsExactly((long) 1 + BATCH);
    }
  }

  @Test
  void aStoreOutageDuringABatchIsNotAnAttemptAndReturnsNothing() throws Exception {
    int limit = 2;
    try (TestQueue queue = quorumQueue("batch-outage", limit);
        TestDatabase db = TestDatabase.fresh("rabbit_batch")) {
      Gate gate = new Gate();
      OutcomeRecorder outcomes = new OutcomeRecorder();
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("batch-outage")
          .retryPolicy(RetryPolicy.builder().maxAttempts(limit).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
              .multiplier(1.0).jitter(0).build())
          .listener(outcomes)
          .handler((message, session) -> {
            gate.pass(message);
            attempts.add(message.deliveryAttempt());
            TestDatabase.record(session, String.valueOf(message.header("idempotency-key")), message.deliveryAttempt());
          })
          .listener(new io.idem.IdempotencyListener() {
            @Override
            public void afterCommit(io.idem.InboundMessage message, io.idem.IdempotencyKey key,
                ProcessingOutcome pending) {
              if (key.value().equals("gate")) {
                try {
                  sql(db, "ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              }
            }
          })
          .build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config(queue, limit), pipeline)) {
        consumer.start();
        gate.batchBehind(queue, consumer, keys("o-", BATCH)); // the store goes once the gate committed
        // the batch's transaction failed on the outage: every message of it, more often than the
        // queue's delivery limit
        await("store retries past the delivery limit").atMost(Duration.ofSeconds(30))
            .until(() -> outcomes.count("o-" + BATCH, ProcessingOutcome.RETRY_STORE_UNAVAILABLE) > 2 * limit
                && outcomes.count("o-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) > 2 * limit);
        assertThat(queue.ready()).isZero(); // held unacked by the consumer, never returned
        assertThat(attempts).containsExactly(1); // the gate's
        sql(db, "ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
        await("applied after the outage").atMost(Duration.ofSeconds(30)).until(() -> db.totalEffects() == 1 + BATCH);
      }
      assertThat(attempts).hasSize(1 + BATCH).containsOnly(1);
      assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(1 + BATCH);
      assertThat(queue.deadLetters()).isEmpty();
      assertThat(queue.ready()).isZero();
    }
  }

  @Test
  void aPrefetchBelowMaxBatchSizeIsKeptBoundsEveryBatchAndIsWarnedOnceAtStart() throws Exception {
    int prefetch = 3;
    try (TestQueue queue = TestQueue.declare("batch-prefetch", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_batch")) {
      for (String key : keys("p-", 3 * BATCH)) {
        queue.publish(key, "{}");
      }
      Map<Long, List<String>> transactions = new ConcurrentHashMap<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("batch-prefetch")
          .handler((message, session) -> {
            String key = String.valueOf(message.header("idempotency-key"));
            transactions.computeIfAbsent(transactionId(session), t -> new CopyOnWriteArrayList<>()).add(key);
            TestDatabase.record(session, key, message.deliveryAttempt());
          })
          .build();
      RabbitConsumerConfig config = queue.configBuilder().prefetch(prefetch).build();
      assertThat(config.prefetch()).as("kept as given").isEqualTo(prefetch);
      assertThat(config.maxBatchSize()).isEqualTo(RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
      try (CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class)) {
        try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
          consumer.start();
          await("all applied").atMost(Duration.ofSeconds(30)).until(() -> db.totalEffects() == 3 * BATCH);
        }
        assertThat(log.messages(ch.qos.logback.classic.Level.WARN)).filteredOn(m -> m.contains("prefetch"))
            .containsExactly("RabbitMQ consumer of " + queue.name + ": prefetch 3 is below maxBatchSize 10, so no"
                + " batch is larger than 3 deliveries; leave prefetch unset for max(10, 2 x maxBatchSize), or set"
                + " maxBatchSize(3)");
      }
      assertThat(transactions.values()).as("batches within the prefetch window")
          .allSatisfy(keys -> assertThat(keys).hasSizeBetween(1, prefetch));
      assertThat(transactions.values()).as("batches there were").anySatisfy(keys -> assertThat(keys).hasSizeGreaterThan(1));

      try (CapturedLog log = CapturedLog.of(RabbitIdempotentConsumer.class);
          RabbitIdempotentConsumer defaults = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        assertThat(defaults.config().prefetch()).isEqualTo(2 * RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
        defaults.start();
        assertThat(log.messages(ch.qos.logback.classic.Level.WARN)).noneMatch(m -> m.contains("prefetch"));
      }
    }
  }

  private static long transactionId(SqlSession session) throws Exception {
    try (Statement s = session.getConnection().createStatement();
        ResultSet rs = s.executeQuery("SELECT txid_current()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** One multi-row INSERT for the whole list. */
  static void insertAll(SqlSession session, List<KeyedMessage> messages) throws Exception {
    StringBuilder sql = new StringBuilder("INSERT INTO effects (idem_key, attempt) VALUES ");
    for (int i = 0; i < messages.size(); i++) {
      sql.append(i == 0 ? "(?, ?)" : ", (?, ?)");
    }
    try (PreparedStatement ps = session.getConnection().prepareStatement(sql.toString())) {
      int p = 1;
      for (KeyedMessage m : messages) {
        ps.setString(p++, m.key().value());
        ps.setInt(p++, m.message().deliveryAttempt());
      }
      ps.executeUpdate();
    }
  }

  private static void sql(TestDatabase db, String statement) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
