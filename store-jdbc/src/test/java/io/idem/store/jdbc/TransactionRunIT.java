package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.MessageRun;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A run of per-message transactions ({@link MyBatisProcessedEventStore#openRun()}, {@link
 * MessageRun}): each next claim travels with the previous COMMIT, and nothing about a message's
 * outcome changes — each effect once, the acknowledgement only after its own commit, a failure
 * still that message's — while the carried transaction is released whenever the run does not reach
 * the message it was begun for. Real PostgreSQL; round trips counted from pgjdbc's protocol log as
 * in {@link RoundTripsIT}.
 */
class TransactionRunIT {
  private static final String APP = "transaction-run-it";

  private static String schema;
  private static HikariDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    schema = StoreTests.newSchema("run");
    pool = StoreTests.pool(schema, APP, null, c -> c.setMaximumPoolSize(4));
    StoreTests.execute(pool,
        "CREATE TABLE effects (k text NOT NULL)", // no unique constraint: a double is a second row
        "CREATE TABLE deferred (k text, CONSTRAINT deferred_k UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).claimLockTimeout(Duration.ofMillis(300)).build();
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  private static final MessageHandler<SqlSession> APPLY = StoreTests.INSERT_KEY_INTO_EFFECTS;

  private static IdempotentConsumer<SqlSession> pipeline(MyBatisProcessedEventStore on, MessageHandler<SqlSession> handler) {
    return StoreTests.pipeline(on, handler, false);
  }

  private static long effects(String key) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'");
  }

  private static boolean marker(String key) {
    return store.isProcessed(new IdempotencyKey("classify", key, KeySource.HEADER));
  }

  /** Transactions of this test's pool left open: a carried claim that was never released. */
  private static long openTransactions() throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + APP
        + "' AND state LIKE 'idle in transaction%'");
  }

  /** Processes {@code messages} in one run, each announcing the next, as the Kafka adapter does. */
  private static List<ProcessingOutcome> inOneRun(IdempotentConsumer<SqlSession> pipeline, List<InboundMessage> messages,
      List<RecordedAcknowledgement> acks) {
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    try (MessageRun run = pipeline.openRun()) {
      for (int i = 0; i < messages.size(); i++) {
        InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
        RecordedAcknowledgement ack = new RecordedAcknowledgement();
        acks.add(ack);
        outcomes.add(run.process(messages.get(i), ack, () -> next));
      }
    }
    return outcomes;
  }

  @Test
  void aNewMessageCostsTwoRoundTripsAndADuplicateOneWhenTheClaimTravelsWithTheCommit() throws Exception {
    // MyBatis' own pool: no validation query is counted (as in RoundTripsIT)
    PostgresFixture postgres = PostgresFixture.shared();
    String url = postgres.jdbcUrl();
    PooledDataSource plain = new PooledDataSource("org.postgresql.Driver",
        url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema, postgres.user(), postgres.password());
    try {
      MyBatisProcessedEventStore counted = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(plain))
          .build();
      IdempotentConsumer<SqlSession> pipeline = pipeline(counted, APPLY);
      String seen = "rt-seen-" + UUID.randomUUID();
      assertThat(pipeline.process(StoreTests.message(seen, "{}", 1), new RecordedAcknowledgement()))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      String a = "rt-a-" + UUID.randomUUID();
      String b = "rt-b-" + UUID.randomUUID();
      String c = "rt-c-" + UUID.randomUUID();
      List<InboundMessage> messages = List.of(StoreTests.message(a, "{}", 1), StoreTests.message(b, "{}", 1),
          StoreTests.message(seen, "{}", 1), StoreTests.message(c, "{}", 1));
      List<Long> trips = new ArrayList<>();
      List<ProcessingOutcome> outcomes = new ArrayList<>();
      try (MessageRun run = pipeline.openRun()) {
        for (int i = 0; i < messages.size(); i++) {
          InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
          InboundMessage message = messages.get(i);
          List<String> sent = RoundTripsIT.frontendMessages(
              () -> outcomes.add(run.process(message, new RecordedAcknowledgement(), () -> next)));
          trips.add(RoundTripsIT.roundTrips(sent));
        }
      }
      assertThat(outcomes).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.PROCESSED,
          ProcessingOutcome.DUPLICATE, ProcessingOutcome.PROCESSED);
      // a: its own claim, the INSERT, check + COMMIT + the claim of b; b: the INSERT, check + COMMIT
      // + the claim of the duplicate; the duplicate: COMMIT + the claim of c; c: the INSERT, check + COMMIT
      assertThat(trips).containsExactly(3L, 2L, 1L, 2L);
      for (String key : List.of(a, b, c, seen)) {
        assertThat(effects(key)).as(key).isEqualTo(1);
        assertThat(marker(key)).as(key).isTrue();
      }
    } finally {
      plain.forceCloseAll();
    }
  }

  @Test
  void everyMessageOfARunIsAppliedOnceAndAckedAfterItsOwnCommit() throws Exception {
    List<String> committedAtAck = new ArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, APPLY);
    List<InboundMessage> messages = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String key = "once-" + i + "-" + UUID.randomUUID();
      keys.add(key);
      messages.add(StoreTests.message(key, "{}", 1));
      if (i % 4 == 3) {
        messages.add(StoreTests.message(key, "{}", 1)); // a producer retry right behind it
      }
    }
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    try (MessageRun run = pipeline.openRun()) {
      for (int i = 0; i < messages.size(); i++) {
        InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
        String key = messages.get(i).header("idempotency-key");
        RecordedAcknowledgement ack = new RecordedAcknowledgement() {
          @Override
          public void ack() {
            super.ack();
            // seen from another connection when the broker is told: the commit came first
            committedAtAck.add(marker(key) ? key : "NOT COMMITTED " + key);
          }
        };
        outcomes.add(run.process(messages.get(i), ack, () -> next));
      }
    }
    assertThat(outcomes).filteredOn(o -> o == ProcessingOutcome.PROCESSED).hasSize(20);
    assertThat(outcomes).filteredOn(o -> o == ProcessingOutcome.DUPLICATE).hasSize(5);
    assertThat(committedAtAck).noneMatch(k -> k.startsWith("NOT COMMITTED")).hasSize(25);
    for (String key : keys) {
      assertThat(effects(key)).as(key).isEqualTo(1);
    }
    assertThat(openTransactions()).isZero();
  }

  @Test
  void aRunHandsItsConnectionBackOnceItHeldItLongerThanTheCheckoutBound() throws Exception {
    long slow = MyBatisProcessedEventStore.MAX_RUN_CHECKOUT.toMillis() + 100;
    String a = "checkout-a-" + UUID.randomUUID();
    String b = "checkout-b-" + UUID.randomUUID();
    String c = "checkout-c-" + UUID.randomUUID();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> {
      APPLY.handle(message, session);
      if (b.equals(message.header("idempotency-key"))) {
        Thread.sleep(slow); // b's transaction ends past the bound since the session was taken at a
      }
    });
    List<InboundMessage> messages =
        List.of(StoreTests.message(a, "{}", 1), StoreTests.message(b, "{}", 1), StoreTests.message(c, "{}", 1));
    List<Integer> activeAtAck = new ArrayList<>();
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    try (MessageRun run = pipeline.openRun()) {
      for (int i = 0; i < messages.size(); i++) {
        InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
        RecordedAcknowledgement ack = new RecordedAcknowledgement() {
          @Override
          public void ack() {
            super.ack();
            activeAtAck.add(pool.getHikariPoolMXBean().getActiveConnections());
          }
        };
        outcomes.add(run.process(messages.get(i), ack, () -> next));
      }
    }
    assertThat(outcomes).containsOnly(ProcessingOutcome.PROCESSED).hasSize(3);
    // a carries b's claim (its connection stays out); b committed alone and handed it back; c had none to carry
    assertThat(activeAtAck).containsExactly(1, 0, 0);
    for (String key : List.of(a, b, c)) {
      assertThat(effects(key)).as(key).isEqualTo(1);
    }
  }

  @Test
  void closingTheRunRollsBackTheClaimSentForAMessageNotReached() throws Exception {
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, APPLY);
    String a = "close-a-" + UUID.randomUUID();
    String b = "close-b-" + UUID.randomUUID();
    InboundMessage next = StoreTests.message(b, "{}", 1);
    MessageRun run = pipeline.openRun();
    assertThat(run.process(StoreTests.message(a, "{}", 1), new RecordedAcknowledgement(), () -> next))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(openTransactions()).as("b's claim is carried, uncommitted").isEqualTo(1);
    run.close();
    run.close(); // idempotent
    assertThat(openTransactions()).isZero();
    assertThat(marker(b)).isFalse();
    // nothing holds b's row lock any more: another instance claims it within the lock timeout
    assertThat(pipeline.process(next, new RecordedAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(effects(a)).isEqualTo(1);
    assertThat(effects(b)).isEqualTo(1);
  }

  @Test
  void aMessageOtherThanTheAnnouncedOneRollsBackTheCarriedClaimAndIsProcessedOnItsOwn() throws Exception {
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, APPLY);
    String a = "other-a-" + UUID.randomUUID();
    String b = "other-b-" + UUID.randomUUID();
    String c = "other-c-" + UUID.randomUUID();
    InboundMessage announced = StoreTests.message(b, "{}", 1);
    try (MessageRun run = pipeline.openRun()) {
      assertThat(run.process(StoreTests.message(a, "{}", 1), new RecordedAcknowledgement(), () -> announced))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      assertThat(run.process(StoreTests.message(c, "{}", 1), new RecordedAcknowledgement(), () -> null))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      // the same key with another payload: not the claim that was carried either
      String d = "other-d-" + UUID.randomUUID();
      InboundMessage dAnnounced = StoreTests.message(d, "{\"v\":1}", 1);
      assertThat(run.process(StoreTests.message(b, "{}", 1), new RecordedAcknowledgement(), () -> dAnnounced))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      assertThat(run.process(StoreTests.message(d, "{\"v\":2}", 1), new RecordedAcknowledgement(), () -> null))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      assertThat(effects(d)).isEqualTo(1);
    }
    assertThat(openTransactions()).isZero();
    for (String key : List.of(a, b, c)) {
      assertThat(effects(key)).as(key).isEqualTo(1);
    }
  }

  @Test
  void whenTheClaimSentWithTheCommitWaitsOutTheLockTimeoutTheCommitStandsAndTheNextClaimsAgain() throws Exception {
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, APPLY);
    String a = "locked-a-" + UUID.randomUUID();
    String b = "locked-b-" + UUID.randomUUID();
    // another instance's open transaction holds b's marker
    try (Connection other = pool.getConnection()) {
      other.setAutoCommit(false);
      try (Statement s = other.createStatement()) {
        s.execute("INSERT INTO idem_processed_events (consumer_group, idempotency_key, key_source, payload_sha256)"
            + " VALUES ('classify', '" + b + "', 'HEADER', decode(repeat('00', 32), 'hex'))");
      }
      InboundMessage next = StoreTests.message(b, "{}", 1);
      List<RecordedAcknowledgement> acks = new ArrayList<>();
      try (MessageRun run = pipeline.openRun()) {
        RecordedAcknowledgement ack = new RecordedAcknowledgement();
        acks.add(ack);
        assertThat(run.process(StoreTests.message(a, "{}", 1), ack, () -> next))
            .as("a committed before b's claim timed out behind it").isEqualTo(ProcessingOutcome.PROCESSED);
        assertThat(ack.calls).containsExactly("ack");
        assertThat(marker(a)).isTrue();
        assertThat(effects(a)).isEqualTo(1);
        // b's claim already waited the lock timeout: the database's retry (not an attempt), at
        // once — nothing sent, so the record never waits twice
        RecordedAcknowledgement bAck = new RecordedAcknowledgement();
        List<ProcessingOutcome> bOutcome = new ArrayList<>();
        List<String> sent = RoundTripsIT.frontendMessages(() -> bOutcome.add(run.process(next, bAck, () -> null)));
        assertThat(bOutcome).containsExactly(ProcessingOutcome.RETRY_TRANSACTION);
        assertThat(RoundTripsIT.roundTrips(sent)).as("round trips of %s", sent).isZero();
        // its next delivery claims on its own again: still held, so waits and is retried again
        assertThat(run.process(StoreTests.message(b, "{}", 2), new RecordedAcknowledgement(), () -> null))
            .isEqualTo(ProcessingOutcome.RETRY_TRANSACTION);
      }
      other.rollback();
      assertThat(pipeline.process(next, new RecordedAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
    }
    assertThat(effects(b)).isEqualTo(1);
    assertThat(openTransactions()).isZero();
  }

  @Test
  void aCommitThatFailsWithTheNextClaimBesideItIsTheMessagesFailureAndNothingOfItIsApplied() throws Exception {
    // a deferred unique constraint fails at COMMIT: the work's failure (FailureClassificationIT)
    String dup = "deferred-" + UUID.randomUUID();
    StoreTests.execute(pool, "INSERT INTO deferred VALUES ('" + dup + "')");
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> {
      APPLY.handle(message, session);
      StoreTests.execute(session, "INSERT INTO deferred VALUES ('" + dup + "')");
    });
    String a = "fails-a-" + UUID.randomUUID();
    String b = "fails-b-" + UUID.randomUUID();
    InboundMessage next = StoreTests.message(b, "{}", 1);
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    try (MessageRun run = pipeline.openRun()) {
      // as without a run: an integrity violation is not retried by default (FailureClassificationIT)
      assertThat(run.process(StoreTests.message(a, "{}", 1), ack, () -> next))
          .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
      assertThat(ack.calls).containsExactly("deadLetter:NON_RETRYABLE");
    }
    assertThat(marker(a)).isFalse();
    assertThat(marker(b)).isFalse();
    assertThat(effects(a)).isZero();
    assertThat(openTransactions()).isZero();
  }

  @Test
  void aHandlerThatEndsTheTransactionWithTheNextClaimAnnouncedFailsAndLeavesNothing() throws Exception {
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> {
      APPLY.handle(message, session);
      StoreTests.execute(session, "COMMIT"); // ends Idem's transaction by SQL text
      APPLY.handle(message, session);
    });
    String a = "ended-a-" + UUID.randomUUID();
    String b = "ended-b-" + UUID.randomUUID();
    InboundMessage next = StoreTests.message(b, "{}", 1);
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    try (MessageRun run = pipeline.openRun()) {
      assertThat(run.process(StoreTests.message(a, "{}", 1), ack, () -> next)).isEqualTo(ProcessingOutcome.RETRY);
    }
    assertThat(ack.calls).containsExactly("retry");
    assertThat(marker(a)).as("the marker committed early is removed").isFalse();
    assertThat(marker(b)).isFalse();
    assertThat(openTransactions()).isZero();
  }

  @Test
  void aFailingHandlerOfTheCarriedMessageRollsBackItsClaimWithIt() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    String b = "carried-fails-b-" + UUID.randomUUID();
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, (message, session) -> {
      calls.incrementAndGet();
      APPLY.handle(message, session);
      if (b.equals(message.header("idempotency-key"))) {
        throw new IllegalStateException("b fails");
      }
    });
    String a = "carried-fails-a-" + UUID.randomUUID();
    List<RecordedAcknowledgement> acks = new ArrayList<>();
    List<ProcessingOutcome> outcomes = inOneRun(pipeline,
        List.of(StoreTests.message(a, "{}", 1), StoreTests.message(b, "{}", 1)), acks);
    assertThat(outcomes).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY);
    assertThat(acks.get(1).calls).containsExactly("retry");
    assertThat(marker(b)).isFalse();
    assertThat(effects(b)).isZero();
    assertThat(effects(a)).isEqualTo(1);
    assertThat(openTransactions()).isZero();
  }

  @Test
  void aConflictCarriesNothingSoItsDeadLetterDecisionIsNotStuckBehindTheRunsConnection() throws Exception {
    // one connection in the pool: a claim carried past a CONFLICT would hold it while the
    // settlement records the dead-letter decision on another one (pool timeout, then an outage)
    try (HikariDataSource one = StoreTests.pool(schema, APP + "-one", null, c -> c.setMaximumPoolSize(1))) {
      MyBatisProcessedEventStore single = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(one))
          .build();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(single).consumerGroup("classify")
          .handler(APPLY).detectPayloadConflicts(true).build();
      String a = "conflict-a-" + UUID.randomUUID();
      String b = "conflict-b-" + UUID.randomUUID();
      assertThat(pipeline.process(StoreTests.message(a, "{\"v\":1}", 1), new RecordedAcknowledgement()))
          .isEqualTo(ProcessingOutcome.PROCESSED);
      List<RecordedAcknowledgement> acks = new ArrayList<>();
      List<ProcessingOutcome> outcomes = inOneRun(pipeline,
          List.of(StoreTests.message(a, "{\"v\":2}", 1), StoreTests.message(b, "{}", 1)), acks);
      assertThat(outcomes.get(1)).isEqualTo(ProcessingOutcome.PROCESSED);
      assertThat(acks.get(0).calls).containsExactly("deadLetter:CONFLICT");
      assertThat(effects(a)).isEqualTo(1);
      assertThat(effects(b)).isEqualTo(1);
    }
  }

  @Test
  void aNextMessageWithoutAKeyIsNotClaimedAheadAndIsDeadLetteredAsAlways() throws Exception {
    IdempotentConsumer<SqlSession> pipeline = pipeline(store, APPLY);
    String a = "keyless-a-" + UUID.randomUUID();
    InboundMessage keyless = InboundMessage.builder("orders", "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8))
        .deliveryAttempt(1).build();
    List<RecordedAcknowledgement> acks = new ArrayList<>();
    List<ProcessingOutcome> outcomes = inOneRun(pipeline, List.of(StoreTests.message(a, "{}", 1), keyless), acks);
    assertThat(outcomes).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DEAD_LETTERED);
    assertThat(acks.get(1).calls).containsExactly("deadLetter:NO_KEY");
    assertThat(openTransactions()).isZero();
  }

}
