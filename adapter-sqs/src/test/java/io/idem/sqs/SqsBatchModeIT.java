package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BatchMessageHandler;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotentConsumer;
import io.idem.KeyedMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.OutcomeRecorder;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;
import software.amazon.awssdk.services.sqs.model.SqsException;

/**
 * Batch mode ({@link SqsConsumerConfig#maxBatchSize()} above 1) on ElasticMQ and PostgreSQL. The
 * handler is a {@link BatchMessageHandler} that records every call (the keys and attempts it got),
 * so each test sees the batches it really got: the assertions hold for any split of the messages
 * into receives, and the precondition that a batch of more than one message ran is asserted.
 */
class SqsBatchModeIT extends SqsTestBase {

  /** One call of the batch handler: the keys it got and their delivery attempts, in order. */
  record Call(List<String> keys, List<Integer> attempts) {
    boolean has(String key) {
      return keys.contains(key);
    }
  }

  private final List<Call> calls = new CopyOnWriteArrayList<>();

  /**
   * Standard queue, ten messages, one of which always fails: the nine others are applied once and
   * deleted; the failing one is retried and dead-lettered with its reason after {@code
   * maxAttempts} attempts — one handler run on its own per attempt (the run inside the rolled-back
   * batch is no attempt, and once it failed it runs alone).
   */
  @Test
  void oneAlwaysFailingMessageDoesNotPoisonItsBatch() {
    SqsHarness queue = queue(false);
    for (int i = 0; i < 10; i++) {
      publish(queue, "k" + i, "{\"n\":" + i + "}");
    }
    start(queue.config().maxBatchSize(10).build(), batchPipeline(failing("k4"), retries(3)));

    await().atMost(TIMEOUT).until(() -> db.total() == 9 && outcomes.count("k4", ProcessingOutcome.DEAD_LETTERED) == 1);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    assertBatchOfMoreThanOneRan();
    for (int i = 0; i < 10; i++) {
      if (i != 4) {
        assertThat(db.count("k" + i)).as("effects of k%d", i).isEqualTo(1);
        assertThat(outcomes.count("k" + i, ProcessingOutcome.PROCESSED)).isEqualTo(1);
      }
    }
    assertThat(db.doubled()).isZero();
    // attempts: the runs of k4 on its own (the redo of a failed batch, or alone in a receive)
    assertThat(calls).filteredOn(c -> c.has("k4") && c.keys().size() == 1)
        .extracting(c -> c.attempts().get(0)).containsExactly(1, 2, 3);
    assertThat(calls).filteredOn(c -> c.has("k4") && c.keys().size() > 1)
        .allSatisfy(c -> assertThat(c.attempts()).containsOnly(1));
    assertThat(outcomes.count("k4", ProcessingOutcome.RETRY)).isEqualTo(2);
    List<DeadLetteredMessage> dead = queue.deadLetters();
    assertThat(dead).hasSize(1);
    assertThat(dead.get(0).headers()).containsEntry("idempotency-key", "k4")
        .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3");
    assertThat(dead.get(0).cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
    assertThat(dead.get(0).detail()).contains("attempt 3 of 3", "k4 always fails");
  }

  /**
   * FIFO: a1 fails on its first two attempts at the head of group A; a2 and a3 wait behind it, hidden, and are applied
   * after it, in order; group B of the same receive goes on meanwhile. No hand-back counts as an
   * attempt: every message other than a1 runs at attempt 1, a1 at 1, 2, 3, and the queue's
   * {@code RedrivePolicy} (maxReceiveCount 4) moves nothing.
   */
  @Test
  void aFailingHeadHoldsItsGroupsTailWhileTheOtherGroupGoesOn() {
    SqsHarness target = queue(true);
    SqsHarness queue = queue(true, SqsAttemptAccountingIT.redrivePolicy(target, 4));
    for (String key : List.of("a1", "a2", "a3")) {
      queue.publish(Map.of("idempotency-key", key), bytes(key), "A");
    }
    for (String key : List.of("b1", "b2")) {
      queue.publish(Map.of("idempotency-key", key), bytes(key), "B");
    }
    List<List<String>> receives = new CopyOnWriteArrayList<>();
    var sqs = recordingReceives(receives);
    Duration backoff = Duration.ofSeconds(1);
    BatchMessageHandler<SqlSession> handler = (messages, session) -> {
      calls.add(call(messages));
      if (messages.stream().anyMatch(m -> m.key().value().equals("a1") && m.message().deliveryAttempt() <= 2)) {
        throw new IllegalStateException("a1 fails on its first two attempts");
      }
      insertAll(session, messages);
    };
    start(queue.config().deadLetterQueueUrl(null).concurrency(2).maxBatchSize(10).build(),
        batchPipeline(handler, RetryPolicy.builder().maxAttempts(4).initialBackoff(backoff).maxBackoff(backoff)
            .multiplier(1.0).jitter(0).build()), sqs);

    await().atMost(TIMEOUT).until(() -> db.total() == 5);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    List<String> order = db.order();
    assertThat(order).filteredOn(k -> k.startsWith("a")).containsExactly("a1", "a2", "a3");
    assertThat(order).filteredOn(k -> k.startsWith("b")).containsExactly("b1", "b2");
    // the precondition of "goes on": a1 and group B came in the same receive
    List<String> first = receives.stream().filter(r -> r.contains("a1")).findFirst().orElseThrow();
    assertThat(first).as("the receive that brought a1").contains("b1");
    assertThat(order.indexOf("b2")).isLessThan(order.indexOf("a1"));
    // a1 ran alone once it had failed; before its third attempt, a2 and a3 ran only inside a batch
    // that a1 rolled back
    assertThat(calls).filteredOn(c -> c.has("a1") && c.keys().size() == 1)
        .extracting(c -> c.attempts().get(0)).containsExactly(1, 2, 3);
    int a1Succeeded = firstIndex(c -> c.has("a1") && c.attempts().get(c.keys().indexOf("a1")) == 3);
    assertThat(a1Succeeded).isNotNegative();
    assertThat(calls.subList(0, a1Succeeded)).filteredOn(c -> c.has("a2") || c.has("a3"))
        .allSatisfy(c -> assertThat(c.keys()).contains("a1"));
    // hand-backs are no attempts: everything but a1 ran at attempt 1 only
    assertThat(calls).allSatisfy(c -> {
      for (int i = 0; i < c.keys().size(); i++) {
        if (!c.keys().get(i).equals("a1")) {
          assertThat(c.attempts().get(i)).as("attempt of %s", c.keys().get(i)).isEqualTo(1);
        }
      }
    });
    assertThat(outcomes.count("a1", ProcessingOutcome.RETRY)).isEqualTo(2);
    assertThat(target.deadLetters()).isEmpty();
    assertThat(db.doubled()).isZero();
  }

  /**
   * A batch handler writing the effects of every new message of the batch with one multi-row
   * INSERT: each call's single statement inserts exactly the messages it got; a second round
   * with five copies of applied messages and five new ones hands the handler only the new ones.
   */
  @Test
  void aBatchHandlerWritesItsBatchWithOneMultiRowInsert() {
    SqsHarness queue = queue(false);
    for (int i = 0; i < 10; i++) {
      publish(queue, "m" + i, "{\"n\":" + i + "}");
    }
    List<Integer> inserted = new CopyOnWriteArrayList<>();
    BatchMessageHandler<SqlSession> handler = (messages, session) -> {
      calls.add(call(messages));
      inserted.add(insertAll(session, messages));
    };
    List<List<String>> receives = new CopyOnWriteArrayList<>();
    List<String> deleteCalls = new CopyOnWriteArrayList<>();
    SqsClient sqs = recordingReceives(receives, deleteCalls);
    start(queue.config().maxBatchSize(10).deleteBatchWindow(Duration.ZERO).build(), batchPipeline(handler, retries(3)),
        sqs);
    await().atMost(TIMEOUT).until(() -> db.total() == 10);
    for (int i = 5; i < 15; i++) {
      publish(queue, "m" + i, "{\"n\":" + i + "}");
    }
    await().atMost(TIMEOUT).until(() -> db.total() == 15 && outcomes.count(ProcessingOutcome.DUPLICATE) == 5);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    assertBatchOfMoreThanOneRan();
    assertThat(inserted).hasSameSizeAs(calls);
    for (int i = 0; i < calls.size(); i++) {
      assertThat(inserted.get(i)).as("rows of call %d", i).isEqualTo(calls.get(i).keys().size());
    }
    List<String> handled = new ArrayList<>();
    calls.forEach(c -> handled.addAll(c.keys()));
    assertThat(handled).doesNotHaveDuplicates().hasSize(15);
    assertThat(db.doubled()).isZero();
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(15);
    // even with deleteBatchWindow zero: each batch's deletes in one DeleteMessageBatch after its commit
    assertThat(deleteCalls).doesNotContain("deleteMessage").isNotEmpty();
    assertThat(deleteCalls).hasSizeLessThanOrEqualTo(receives.size());
  }

  /**
   * An acknowledgement that throws inside a batch (the dead-letter copy of a keyless message is
   * refused once) does not hold the others up: they are applied once and deleted; the refused one
   * stays in the queue, comes back after the retry backoff and is dead-lettered then.
   */
  @Test
  void aFailedAcknowledgementInABatchLeavesOnlyThatMessageToComeBack() {
    SqsHarness queue = queue(false);
    for (int i = 0; i < 4; i++) {
      publish(queue, "ok-" + i, "{\"n\":" + i + "}");
    }
    queue.publish(Map.of(), bytes("{\"no\":\"key\"}"));
    AtomicInteger refusals = new AtomicInteger();
    SqsClient sqs = interceptedClient((method, args, real) -> {
      if (method.equals("sendMessage") && args[0] instanceof SendMessageRequest request
          && request.queueUrl().equals(queue.dlqUrl()) && refusals.getAndIncrement() == 0) {
        throw SqsException.builder().message("AccessDenied (test)").statusCode(403).build();
      }
      return real.call();
    });
    start(queue.config().maxBatchSize(10).build(), batchPipeline(failing("(no poison)"), retries(3)), sqs);

    await().atMost(TIMEOUT).until(() -> db.total() == 4 && queue.deadLetters().size() == 1);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);

    assertBatchOfMoreThanOneRan();
    assertThat(refusals.get()).as("copies tried").isEqualTo(2);
    for (int i = 0; i < 4; i++) {
      assertThat(db.count("ok-" + i)).isEqualTo(1);
      assertThat(outcomes.count("ok-" + i, ProcessingOutcome.PROCESSED)).isEqualTo(1);
    }
    assertThat(queue.deadLetters().get(0).cause()).isEqualTo(DeadLetterCause.NO_KEY.name());
    // the reason names the key where an SQS producer sets it: a message attribute
    assertThat(queue.deadLetters().get(0).detail()).contains("no message attribute 'idempotency-key'");
  }

  /**
   * A store outage during a batch (the processed-events table renamed away, so the batch's claim
   * fails on the store's own statement) is no attempt and loses nothing: with a {@code
   * RedrivePolicy} of maxReceiveCount 2 and a 2 s visibility timeout, an outage spanning several
   * visibility timeouts keeps the batch hidden in this consumer (heartbeat), every receive count
   * stays 1, nothing reaches the dead-letter queue; once the store is back the batch is applied
   * once, at attempt 1. On a FIFO queue (one message group) the head is held for the store and the
   * rest of the group, not started, stays hidden behind it; then all are applied in order.
   */
  @ParameterizedTest(name = "FIFO {0}")
  @ValueSource(booleans = {false, true})
  void aStoreOutageDuringABatchIsNoAttemptAndLosesNothing(boolean fifo) throws Exception {
    SqsHarness target = queue(fifo);
    SqsHarness queue = queue(fifo, SqsAttemptAccountingIT.redrivePolicy(target, 2));
    RetryPolicy retries = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(500))
        .maxBackoff(Duration.ofMillis(500)).multiplier(1.0).jitter(0).build();
    for (int i = 0; i < 5; i++) {
      queue.publish(Map.of("idempotency-key", "held-" + i), bytes("{\"n\":" + i + "}"), "g");
    }
    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    List<List<String>> receives = new CopyOnWriteArrayList<>();
    start(queue.config().deadLetterQueueUrl(null).visibilityTimeout(Duration.ofSeconds(2)).maxBatchSize(10).build(),
        batchPipeline(failing("(no poison)"), retries), recordingReceives(receives));

    await("store retries spanning several visibility timeouts").atMost(TIMEOUT)
        // every message of a standard batch answers each try; a FIFO group only its head
        .until(() -> outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= (fifo ? 8 : 40));
    // the batch is the first receive (the next one waits for it): held, in flight, however it split
    int got = receives.get(0).size();
    assertThat(got).as("messages of the batch held through the outage").isGreaterThan(1);
    assertThat(receives).hasSize(1);
    assertThat(queue.inFlightCount()).isEqualTo(got);
    assertThat(queue.visibleCount()).isEqualTo(5 - got);
    assertThat(target.deadLetters()).isEmpty();
    assertThat(outcomes.settled()).extracting(OutcomeRecorder.Settled::attempt).containsOnly(1);
    assertThat(outcomes.settled()).extracting(OutcomeRecorder.Settled::outcome)
        .containsOnly(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);

    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> db.total() == 5);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    assertBatchOfMoreThanOneRan();
    assertThat(calls).allSatisfy(c -> assertThat(c.attempts()).containsOnly(1));
    if (fifo) {
      assertThat(db.order()).containsExactly("held-0", "held-1", "held-2", "held-3", "held-4");
    }
    for (int i = 0; i < 5; i++) {
      assertThat(db.count("held-" + i)).isEqualTo(1);
      assertThat(outcomes.count("held-" + i, ProcessingOutcome.PROCESSED)).isEqualTo(1);
    }
    assertThat(target.deadLetters()).isEmpty();
  }

  /** A client that adds the keys of every non-empty receive to {@code receives}. */
  private SqsClient recordingReceives(List<List<String>> receives) {
    return recordingReceives(receives, new ArrayList<>());
  }

  /** ... and the name of every delete call to {@code deletes}. */
  private SqsClient recordingReceives(List<List<String>> receives, List<String> deletes) {
    return interceptedClient((method, args, real) -> {
      if (method.startsWith("deleteMessage")) {
        deletes.add(method);
      }
      Object result = real.call();
      if (method.equals("receiveMessage") && result instanceof ReceiveMessageResponse response
          && response.hasMessages() && !response.messages().isEmpty()) {
        receives.add(keys(response.messages()));
      }
      return result;
    });
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private void assertBatchOfMoreThanOneRan() {
    assertThat(calls).as("batch handler calls").anySatisfy(c -> assertThat(c.keys()).hasSizeGreaterThan(1));
    assertThat(calls).allSatisfy(c -> assertThat(c.keys()).hasSizeLessThanOrEqualTo(10));
  }

  private int firstIndex(java.util.function.Predicate<Call> which) {
    for (int i = 0; i < calls.size(); i++) {
      if (which.test(calls.get(i))) {
        return i;
      }
    }
    return -1;
  }

  /** A batch handler that fails whenever {@code poison} is among its messages, else inserts them. */
  private BatchMessageHandler<SqlSession> failing(String poison) {
    return (messages, session) -> {
      calls.add(call(messages));
      if (messages.stream().anyMatch(m -> m.key().value().equals(poison))) {
        throw new IllegalStateException(poison + " always fails");
      }
      insertAll(session, messages);
    };
  }

  private IdempotentConsumer<SqlSession> batchPipeline(BatchMessageHandler<SqlSession> handler, RetryPolicy retries) {
    return IdempotentConsumer.builder(db.store).consumerGroup(group).batchHandler(handler)
        .retryPolicy(retries).listener(outcomes).build();
  }

  private static Call call(List<KeyedMessage> messages) {
    List<String> keys = new ArrayList<>();
    List<Integer> attempts = new ArrayList<>();
    for (KeyedMessage m : messages) {
      keys.add(m.key().value());
      attempts.add(m.message().deliveryAttempt());
    }
    return new Call(Collections.unmodifiableList(keys), Collections.unmodifiableList(attempts));
  }

  /** One {@code INSERT ... VALUES (...), (...), ...} for all of {@code messages}; its row count. */
  static int insertAll(SqlSession session, List<KeyedMessage> messages) throws SQLException {
    StringBuilder sql = new StringBuilder("INSERT INTO effects (idem_key, payload) VALUES ");
    for (int i = 0; i < messages.size(); i++) {
      sql.append(i == 0 ? "(?, ?)" : ", (?, ?)");
    }
    try (PreparedStatement ps = session.getConnection().prepareStatement(sql.toString())) {
      int p = 1;
      for (KeyedMessage m : messages) {
        ps.setString(p++, m.key().value());
        ps.setBytes(p++, m.message().payload());
      }
      return ps.executeUpdate();
    }
  }

  private static List<String> keys(List<Message> messages) {
    List<String> keys = new ArrayList<>();
    for (Message m : messages) {
      var key = m.messageAttributes().get("idempotency-key");
      keys.add(key == null ? "(none)" : key.stringValue());
    }
    return keys;
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
