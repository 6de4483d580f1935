package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.KeySource;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The outbox on the real PostgreSQL: enqueue joins the handler's transaction; the relay publishes
 * and marks sent; two relays never hold one row at once; failures back off and park with the
 * reason; order per ordering key; the counts; sent rows purged in batches. Each test has a schema
 * of its own. {@link MariaDbOutboxRelayIT} runs every test on MariaDB (the test's own SQL that
 * differs there is in {@link OutboxTestDatabase}).
 */
class OutboxRelayIT {
  private static final Outbox OUTBOX = Outbox.ofDefaults();
  private static final String APPLICATION = "idem-outbox-it";
  private HikariDataSource pool;
  private SqlSessionFactory sessions;

  /** The database of the test (MariaDbOutboxRelayIT: MariaDB). */
  OutboxTestDatabase database() {
    return OutboxTestDatabase.POSTGRESQL;
  }

  @BeforeEach
  void setUp() {
    pool = database().newPool("outbox", APPLICATION);
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
  }

  @AfterEach
  void tearDown() {
    pool.close();
  }

  /** Records every publish; fails (or refuses for good) the ids it is told to. */
  static final class RecordingPublisher implements OutboxPublisher {
    final List<OutboxMessage> published = new CopyOnWriteArrayList<>();
    final Map<Long, Integer> failuresLeft = new ConcurrentHashMap<>();
    final Set<Long> refused = ConcurrentHashMap.newKeySet();

    @Override
    public void publish(OutboxMessage message) {
      if (refused.contains(message.id())) {
        throw new NonRetryableException("destination refused row " + message.id());
      }
      if (failuresLeft.merge(message.id(), -1, Integer::sum) >= 0) {
        throw new IllegalStateException("broker unavailable for row " + message.id());
      }
      published.add(message);
    }
  }

  private void enqueue(OutboxEntry... entries) {
    try (SqlSession session = sessions.openSession(false)) {
      for (OutboxEntry e : entries) {
        assertThat(OUTBOX.enqueue(session, e)).isTrue();
      }
      session.commit();
    }
  }

  private static OutboxEntry entry(String key, String orderingKey) {
    return new OutboxEntry(key, "receipts", orderingKey, key.getBytes(StandardCharsets.UTF_8), Map.of());
  }

  private Map<String, Object> row(String key) throws Exception {
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT id, attempts, sent_at IS NOT NULL AS sent,"
            + " parked_at IS NOT NULL AS parked, last_error, " + database().dueInMillis() + " AS due_in_ms"
            + " FROM idem_outbox WHERE idempotency_key = '" + key + "'")) {
      assertThat(rs.next()).as("row " + key).isTrue();
      Map<String, Object> row = new HashMap<>();
      row.put("id", rs.getLong("id"));
      row.put("attempts", rs.getInt("attempts"));
      row.put("sent", rs.getBoolean("sent")); // MariaDB answers 1 or 0
      row.put("parked", rs.getBoolean("parked"));
      row.put("last_error", rs.getString("last_error"));
      row.put("due_in_ms", rs.getDouble("due_in_ms"));
      return row;
    }
  }

  /** Every backoff over: the clock moved on, without waiting for it. */
  private void fastForward() throws Exception {
    StoreTests.execute(pool, "UPDATE idem_outbox SET next_attempt_at = " + database().now() + " WHERE sent_at IS NULL");
  }

  private OutboxRelay.Builder relay(OutboxPublisher publisher) {
    return relay(publisher, 5, Duration.ofMillis(100));
  }

  private OutboxRelay.Builder relay(OutboxPublisher publisher, int maxAttempts, Duration backoff) {
    return OutboxRelay.builder(sessions, publisher).batchSize(10).pollInterval(Duration.ofMillis(20))
        .retryPolicy(RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(backoff)
            .maxBackoff(backoff.multipliedBy(2)).jitter(0).build());
  }

  @Test
  void enqueueCommitsWithTheHandlersTransactionAndRollsBackWithIt() throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .createTableIfMissing(true).build();
    IdempotentConsumer<SqlSession> consumer = IdempotentConsumer.builder(store)
        .consumerGroup("billing")
        .handler((IdempotencyKey key, io.idem.InboundMessage message, SqlSession session) -> {
          OUTBOX.enqueue(session, key, "receipts", message.payload(), Map.of("type", "receipt"));
          if (new String(message.payload(), StandardCharsets.UTF_8).equals("fails")) {
            throw new NonRetryableException("the handler failed after enqueueing");
          }
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(1).build())
        .build();
    assertThat(consumer.process(StoreTests.message("paid-1", "ok", 1), new RecordedAcknowledgement()))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(consumer.process(StoreTests.message("paid-2", "fails", 1), new RecordedAcknowledgement()))
        .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(consumer.process(StoreTests.message("paid-1", "ok", 2), new RecordedAcknowledgement()))
        .isEqualTo(ProcessingOutcome.DUPLICATE);

    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'paid-1'")).isEqualTo(1);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE idempotency_key = 'paid-2'"))
        .as("rolled back with the handler's transaction").isZero();
    RecordingPublisher publisher = new RecordingPublisher();
    assertThat(relay(publisher).build().relayOnce()).isEqualTo(1);
    assertThat(publisher.published).singleElement().satisfies(m -> {
      assertThat(m.idempotencyKey()).isEqualTo("paid-1");
      assertThat(m.headers()).containsExactly(Map.entry("type", "receipt"));
      assertThat(m.attempt()).isEqualTo(1);
    });
  }

  @Test
  void enqueueingTheSameDestinationAndKeyTwiceWritesOneRow() throws Exception {
    try (SqlSession session = sessions.openSession(false)) {
      assertThat(OUTBOX.enqueue(session, entry("k", null))).isTrue();
      assertThat(OUTBOX.enqueue(session, entry("k", null))).isFalse();
      assertThat(OUTBOX.enqueue(session, new OutboxEntry("k", "emails", null, new byte[0], Map.of()))).isTrue();
      session.commit();
    }
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox"))
        .as("the transaction went on after the refused duplicate: both rows committed").isEqualTo(2);
  }

  /**
   * Two transactions enqueue one (destination, key) at once: the second waits for the first (the
   * unique key; MariaDB: InnoDB's duplicate check), then writes nothing when the first committed
   * and its own transaction goes on (MariaDB: the 1062 rolled back that statement only), or
   * writes the row when the first rolled back.
   */
  @Test
  void aRacingEnqueueOfOneKeyWaitsForTheFirstAndWritesOnlyWhenItRolledBack() throws Exception {
    for (boolean firstCommits : new boolean[] {true, false}) {
      String key = "race-" + firstCommits;
      java.util.concurrent.ExecutorService racer = java.util.concurrent.Executors.newSingleThreadExecutor();
      try (SqlSession first = sessions.openSession(false)) {
        assertThat(OUTBOX.enqueue(first, entry(key, null))).isTrue();
        java.util.concurrent.Future<Boolean> second = racer.submit(() -> {
          try (SqlSession session = sessions.openSession(false)) {
            boolean written = OUTBOX.enqueue(session, entry(key, null));
            assertThat(OUTBOX.enqueue(session, entry(key + "-after", null))).isTrue();
            session.commit();
            return written;
          }
        });
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
            .until(() -> second.isDone() || StoreTests.count(pool, database().lockWaits(APPLICATION)) > 0);
        assertThat(second.isDone()).as("the second enqueue waits for the first transaction").isFalse();
        if (firstCommits) {
          first.commit();
        } else {
          first.rollback(true);
        }
        assertThat(second.get(20, TimeUnit.SECONDS)).as("written by the second (first commits: %s)", firstCommits)
            .isEqualTo(!firstCommits);
      } finally {
        racer.shutdownNow();
      }
      assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE idempotency_key = '" + key + "'"))
          .isEqualTo(1);
      assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE idempotency_key = '" + key + "-after'"))
          .as("the second transaction went on and committed").isEqualTo(1);
    }
  }

  @Test
  void theRelayPublishesMarksSentAndDoesNotPublishASentRowAgain() throws Exception {
    enqueue(entry("a", null), entry("b", "order-1"));
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = relay(publisher).build();
    assertThat(relay.relayOnce()).isEqualTo(2);
    assertThat(publisher.published).extracting(OutboxMessage::idempotencyKey).containsExactly("a", "b");
    assertThat(publisher.published.get(1).orderingKey()).isEqualTo("order-1");
    assertThat(publisher.published.get(0).payload()).asString(StandardCharsets.UTF_8).isEqualTo("a");
    assertThat(row("a")).containsEntry("sent", true).containsEntry("attempts", 1);
    assertThat(relay.relayOnce()).isZero();
    assertThat(publisher.published).hasSize(2);
    assertThat(relay.stats()).satisfies(s -> {
      assertThat(s.backlog()).isZero();
      assertThat(s.published()).isEqualTo(2);
    });
  }

  @Test
  void aFailedPublishBacksOffAndParksAfterMaxAttemptsWithTheReason() throws Exception {
    enqueue(entry("flaky", null));
    RecordingPublisher publisher = new RecordingPublisher();
    long id = (Long) row("flaky").get("id");
    publisher.failuresLeft.put(id, 3);
    OutboxRelay relay = relay(publisher, 3, Duration.ofMinutes(1)).build();

    assertThat(relay.relayOnce()).isEqualTo(1);
    Map<String, Object> afterFirst = row("flaky");
    assertThat(afterFirst).containsEntry("attempts", 1).containsEntry("parked", false).containsEntry("sent", false);
    assertThat((String) afterFirst.get("last_error")).contains("broker unavailable for row " + id);
    assertThat(((Number) afterFirst.get("due_in_ms")).doubleValue()).as("the first backoff, 1 min")
        .isBetween(30_000.0, 60_000.0);
    assertThat(relay.relayOnce()).as("not due during its backoff").isZero();

    fastForward();
    assertThat(relay.relayOnce()).isEqualTo(1);
    Map<String, Object> afterSecond = row("flaky");
    assertThat(afterSecond).containsEntry("attempts", 2).containsEntry("parked", false);
    assertThat(((Number) afterSecond.get("due_in_ms")).doubleValue()).as("doubled: 2 min")
        .isBetween(90_000.0, 120_000.0);
    fastForward();
    assertThat(relay.relayOnce()).isEqualTo(1);
    Map<String, Object> parked = row("flaky");
    assertThat(parked).containsEntry("attempts", 3).containsEntry("parked", true).containsEntry("sent", false);
    assertThat((String) parked.get("last_error")).contains("IllegalStateException: broker unavailable");
    assertThat(publisher.published).isEmpty();
    assertThat(relay.stats()).satisfies(s -> {
      assertThat(s.parked()).isEqualTo(1);
      assertThat(s.backlog()).isZero();
      assertThat(s.failures()).isEqualTo(3);
    });

    try (SqlSession session = sessions.openSession(false)) {
      assertThat(OUTBOX.unpark(session, id)).isTrue();
      session.commit();
    }
    assertThat(relay.relayOnce()).isEqualTo(1);
    assertThat(publisher.published).extracting(OutboxMessage::attempt).containsExactly(1);
    assertThat(row("flaky")).containsEntry("sent", true);
  }

  @Test
  void aNonRetryableFailureParksAtOnce() throws Exception {
    enqueue(entry("refused", null));
    RecordingPublisher publisher = new RecordingPublisher();
    publisher.refused.add((Long) row("refused").get("id"));
    relay(publisher).build().relayOnce();
    assertThat(row("refused")).containsEntry("attempts", 1).containsEntry("parked", true);
    assertThat((String) row("refused").get("last_error")).contains("NonRetryableException: destination refused");
  }

  @Test
  void rowsWithOneOrderingKeyArePublishedInOrderAndAFailingRowHoldsTheOnesBehindIt() throws Exception {
    enqueue(entry("a1", "A"), entry("b1", "B"), entry("a2", "A"), entry("c1", "C"), entry("a3", "A"),
        entry("c2", "C"), entry("u1", null));
    RecordingPublisher publisher = new RecordingPublisher();
    publisher.failuresLeft.put((Long) row("a1").get("id"), 1);
    publisher.refused.add((Long) row("c1").get("id"));
    OutboxRelay relay = relay(publisher, 5, Duration.ofMinutes(1)).build();

    relay.relayOnce(); // a1 fails, b1, c1 parked, u1
    assertThat(publisher.published).extracting(OutboxMessage::idempotencyKey).containsExactly("b1", "u1");
    assertThat(relay.relayOnce()).as("a2 and c2 wait behind a1 and c1").isZero();
    fastForward();
    for (int round = 0; round < 10 && relay.relayOnce() > 0; round++) {
      // one row of A per round: a1, a2, a3
    }
    assertThat(publisher.published).extracting(OutboxMessage::idempotencyKey)
        .containsExactly("b1", "u1", "a1", "a2", "a3");
    assertThat(row("c2")).as("held by the parked c1").containsEntry("sent", false).containsEntry("attempts", 0);
  }

  /**
   * close() while a publish is in flight: the relay stops claiming, the row in flight is published
   * and marked sent, the rest of its batch stays due and unattempted, and the thread ends.
   */
  @Test
  void closeFinishesTheRowInFlightAndLeavesTheRestOfTheBatchDue() throws Exception {
    enqueue(entry("first", null), entry("second", null), entry("third", null));
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<String> published = new CopyOnWriteArrayList<>();
    OutboxRelay relay = relay(message -> {
      inFlight.countDown();
      if (!release.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("never released");
      }
      published.add(message.idempotencyKey());
    }).name("closing-relay").build();
    relay.start();
    assertThat(inFlight.await(30, TimeUnit.SECONDS)).isTrue();
    Thread closer = new Thread(relay::close, "closer");
    closer.start();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
        .until(() -> closer.getState() == Thread.State.TIMED_WAITING); // close() joins the relay thread
    release.countDown();
    closer.join(30_000);
    assertThat(closer.isAlive()).isFalse();
    assertThat(published).containsExactly("first");
    assertThat(row("first")).containsEntry("sent", true);
    assertThat(row("second")).containsEntry("sent", false).containsEntry("attempts", 0);
    assertThat(row("third")).containsEntry("sent", false).containsEntry("attempts", 0);
    assertThat(relay.lastStats().failures()).isZero();
  }

  /**
   * Two relays race on 200 rows over 8 ordering keys plus unordered ones. Each relay's first
   * publish waits until the other's has started, so both hold a batch at once (the race is proven,
   * not hoped for); no row is ever in flight twice, no ordering key is ever in flight twice, each
   * row is published once, and each key's rows in enqueue order.
   */
  @Test
  void twoRelaysNeverPublishOneRowTwiceAndKeepTheOrderPerKey() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      entries.add(entry(String.format("r%03d", i), i % 3 == 0 ? null : "key-" + (i % 8)));
    }
    enqueue(entries.toArray(OutboxEntry[]::new));
    Set<Long> inFlight = ConcurrentHashMap.newKeySet();
    Set<String> keysInFlight = ConcurrentHashMap.newKeySet();
    List<String> violations = new CopyOnWriteArrayList<>();
    List<OutboxMessage> published = new CopyOnWriteArrayList<>();
    CountDownLatch bothPublishing = new CountDownLatch(2);
    Map<String, AtomicBoolean> firstCall = Map.of("relay-1", new AtomicBoolean(true), "relay-2", new AtomicBoolean(true));
    List<OutboxRelay> relays = new ArrayList<>();
    for (String name : List.of("relay-1", "relay-2")) {
      OutboxPublisher publisher = message -> {
        if (!inFlight.add(message.id())) {
          violations.add("row " + message.id() + " published by two relays at once");
        }
        if (message.orderingKey() != null && !keysInFlight.add(message.orderingKey())) {
          violations.add("ordering key " + message.orderingKey() + " in flight twice");
        }
        if (firstCall.get(name).getAndSet(false)) {
          bothPublishing.countDown();
          if (!bothPublishing.await(20, TimeUnit.SECONDS)) {
            violations.add(name + ": the other relay never published while this one held a batch");
          }
        }
        published.add(message);
        if (message.orderingKey() != null) {
          keysInFlight.remove(message.orderingKey());
        }
        inFlight.remove(message.id());
      };
      relays.add(relay(publisher).name(name).build());
    }
    relays.forEach(OutboxRelay::start);
    try {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
          .until(() -> StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    } finally {
      relays.forEach(OutboxRelay::close);
    }
    assertThat(violations).isEmpty();
    assertThat(bothPublishing.getCount()).isZero();
    assertThat(published).extracting(OutboxMessage::id).doesNotHaveDuplicates().hasSize(200);
    Map<String, Long> lastIdPerKey = new HashMap<>();
    List<OutboxMessage> inPublishOrder = new ArrayList<>(published);
    for (OutboxMessage m : inPublishOrder) {
      if (m.orderingKey() != null) {
        Long previous = lastIdPerKey.put(m.orderingKey(), m.id());
        assertThat(previous == null || previous < m.id()).as("order of " + m.orderingKey() + " at row " + m.id()).isTrue();
      }
    }
    assertThat(relays.get(0).lastStats().published() + relays.get(1).lastStats().published()).isEqualTo(200);
  }

  @Test
  void theMetricsShowBacklogOldestAgeAndParkedRows() throws Exception {
    enqueue(entry("waiting", null), entry("refused", null));
    RecordingPublisher publisher = new RecordingPublisher();
    long waiting = (Long) row("waiting").get("id");
    publisher.failuresLeft.put(waiting, 1);
    publisher.refused.add((Long) row("refused").get("id"));
    OutboxRelay relay = relay(publisher, 5, Duration.ofMinutes(1)).build();
    relay.relayOnce();
    OutboxStats stats = relay.stats();
    assertThat(stats.backlog()).isEqualTo(1);
    assertThat(stats.parked()).isEqualTo(1);
    assertThat(stats.oldestUnsentAge()).isPositive();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerOutboxMetrics.bind(registry, relay);
    assertThat(registry.get("idem.outbox.backlog").gauge().value()).isEqualTo(1.0);
    assertThat(registry.get("idem.outbox.parked").gauge().value()).isEqualTo(1.0);
    assertThat(registry.get("idem.outbox.oldest.unsent.age").gauge().value()).isPositive();
    assertThat(registry.get("idem.outbox.failures").functionCounter().count()).isEqualTo(2.0);
  }

  /**
   * More ordering keys than a claim visits (batchSize 10, 25 keys of 2 rows): the claims walk the
   * keys in turn from the last one visited, every row goes out once, each key in id order.
   */
  @Test
  void moreKeysThanAClaimVisitsAreWalkedInTurnAndEachKeyKeepsItsOrder() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int round = 0; round < 2; round++) {
      for (int k = 0; k < 25; k++) {
        entries.add(entry(String.format("k%02d-%d", k, round), String.format("key-%02d", k)));
      }
    }
    enqueue(entries.toArray(OutboxEntry[]::new));
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = relay(publisher).build();
    for (int claims = 0; claims < 20 && publisher.published.size() < 50; claims++) {
      relay.relayOnce();
    }
    assertThat(publisher.published).extracting(OutboxMessage::id).doesNotHaveDuplicates().hasSize(50);
    Map<String, Long> lastIdPerKey = new HashMap<>();
    for (OutboxMessage m : publisher.published) {
      Long previous = lastIdPerKey.put(m.orderingKey(), m.id());
      assertThat(previous == null || previous < m.id()).as("order of " + m.orderingKey()).isTrue();
    }
    assertThat(lastIdPerKey).hasSize(25);
  }

  /**
   * Retention of sent rows: purgeSent deletes only rows sent before the cutoff (unsent and parked
   * rows stay whatever their age), at most maxRows per call, in the caller's transaction.
   */
  @Test
  void purgeSentDeletesOnlyRowsSentBeforeTheCutoffInBoundedBatches() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 25; i++) {
      entries.add(entry("sent-" + i, null));
    }
    entries.add(entry("unsent", null));
    enqueue(entries.toArray(OutboxEntry[]::new));
    StoreTests.execute(pool, "UPDATE idem_outbox SET sent_at = enqueued_at WHERE idempotency_key LIKE 'sent-%'",
        "UPDATE idem_outbox SET parked_at = enqueued_at WHERE idempotency_key = 'unsent'");
    Instant cutoff = Instant.now().plusSeconds(60); // every sent row is older than the cutoff
    List<Integer> batches = new ArrayList<>();
    try (SqlSession session = sessions.openSession(false)) {
      for (int deleted = -1; deleted != 0; ) {
        deleted = OUTBOX.purgeSent(session, cutoff, 10);
        batches.add(deleted);
        session.commit();
      }
      assertThat(OUTBOX.purgeSent(session, Instant.now().minusSeconds(3600), 10))
          .as("nothing was sent an hour ago").isZero();
    }
    assertThat(batches).containsExactly(10, 10, 5, 0);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox")).isEqualTo(1);
    assertThat(row("unsent")).containsEntry("parked", true);
  }
}
