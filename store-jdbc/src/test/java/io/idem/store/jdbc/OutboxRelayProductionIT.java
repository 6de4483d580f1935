package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ibatis.mapping.BoundSql;
import org.apache.ibatis.mapping.ParameterMapping;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The relay in production conditions on the real PostgreSQL: it survives a publisher's {@link
 * Error}, drains a hot ordering key without sleeping while rows are due, and its claim reads an
 * index, not the blocked backlog, at 100,000 rows (EXPLAIN ANALYZE). Each test has a schema.
 */
class OutboxRelayProductionIT {
  private static final Outbox OUTBOX = Outbox.ofDefaults();
  private HikariDataSource pool;
  private String schema;
  /** This test's sessions in pg_stat_activity (other runs share the server). */
  private String applicationName;
  private SqlSessionFactory sessions;
  private final List<OutboxRelay> relays = new ArrayList<>();

  @BeforeEach
  void setUp() {
    schema = StoreTests.newSchema("outbox_prod");
    applicationName = "idem-it-" + schema;
    pool = StoreTests.pool(schema, applicationName, null, c -> c.setMaximumPoolSize(6));
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
  }

  @AfterEach
  void tearDown() {
    relays.forEach(OutboxRelay::close);
    pool.close();
  }

  private void enqueue(List<OutboxEntry> entries) {
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

  private OutboxRelay started(OutboxRelay relay) {
    relays.add(relay);
    relay.start();
    return relay;
  }

  /** What a publisher taking whole batches does with one; every row of it is then sent. */
  private interface BatchBody {
    void accept(List<OutboxMessage> batch) throws Exception;
  }

  /** A publisher that takes whole batches only ({@code publish} is not called). */
  private static OutboxPublisher batchesOnly(BatchBody body) {
    return new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("publishAll is used");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> batch) throws Exception {
        body.accept(batch);
        return batch.stream().map(OutboxPublishResult::sent).toList();
      }
    };
  }

  private static String idList(List<OutboxMessage> batch) {
    return batch.stream().map(m -> String.valueOf(m.id())).reduce((a, b) -> a + "," + b).orElseThrow();
  }

  /**
   * Waits up to {@code wait} for unsent rows leased outside {@code ids} (a batch claimed beside
   * the one in flight); whether there are.
   */
  private boolean leasedBeside(String ids, Duration wait) throws Exception {
    String sql = "SELECT count(*) FROM idem_outbox WHERE leased_by IS NOT NULL AND sent_at IS NULL AND id NOT IN ("
        + ids + ")";
    long deadline = System.nanoTime() + wait.toNanos();
    while (StoreTests.count(pool, sql) == 0) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  private static int recurse(int depth) {
    return depth == Integer.MAX_VALUE ? depth : recurse(depth + 1) + 1; // a serializer gone wrong
  }

  /**
   * A publisher whose serializer overflows the stack for one row among 300: the relay thread
   * lives on (logs the row id at ERROR), the 299 other rows are sent, the row is charged each
   * attempt and parked after maxAttempts, and the relay still runs and says what happened.
   */
  @Test
  void aPublisherErrorForOneRowIsThatRowsFailedAttemptAndTheRelayRunsOn() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      entries.add(entry(String.format("soe-%03d", i), null));
    }
    enqueue(entries);
    long poisoned = StoreTests.count(pool, "SELECT id FROM idem_outbox WHERE idempotency_key = 'soe-040'");
    List<Long> published = new CopyOnWriteArrayList<>();
    OutboxPublisher publisher = message -> {
      if (message.id() == poisoned) {
        recurse(0);
      }
      published.add(message.id());
    };
    Duration backoff = Duration.ofMillis(50);
    OutboxRelay relay = started(OutboxRelay.builder(sessions, publisher).batchSize(50)
        .pollInterval(Duration.ofMillis(20)).statsInterval(Duration.ofMillis(50)).name("soe-relay")
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(backoff).maxBackoff(backoff).jitter(0).build())
        .build());

    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() ->
        StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL AND parked_at IS NULL") == 0);

    assertThat(published).hasSize(299).doesNotContain(poisoned).doesNotHaveDuplicates();
    assertThat(StoreTests.count(pool, "SELECT attempts FROM idem_outbox WHERE id = " + poisoned)).isEqualTo(3);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE id = " + poisoned
        + " AND parked_at IS NOT NULL AND last_error LIKE 'java.lang.StackOverflowError%'")).isEqualTo(1);
    assertThat(relay.isRunning()).isTrue();
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      OutboxRelayHealth health = relay.health();
      assertThat(health.running()).isTrue();
      assertThat(health.status()).isEqualTo("UP");
      assertThat(health.lastPublishAt()).isNotNull();
      assertThat(health.lastError()).contains("row " + poisoned).contains("StackOverflowError");
      assertThat(health.stats().parked()).isEqualTo(1);
      assertThat(health.stats().published()).isEqualTo(299);
      assertThat(health.stats().failures()).isEqualTo(3);
    });
    io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    MicrometerOutboxMetrics.bind(registry, relay);
    assertThat(registry.get("idem.outbox.relay.running").gauge().value()).isEqualTo(1.0);
    assertThat(registry.get("idem.outbox.destination.unavailable").gauge().value()).isZero();
    assertThat(registry.get("idem.outbox.last.publish.age").gauge().value()).isNotNaN().isNotNegative();
    assertThat(registry.get("idem.outbox.claims").functionCounter().count()).isPositive();
    java.time.Instant cycle = relay.health().lastCycleAt();
    await().atMost(Duration.ofSeconds(30)).until(() -> relay.health().lastCycleAt().isAfter(cycle));
    relay.close();
    assertThat(relay.isRunning()).isFalse();
    assertThat(relay.health().status()).isEqualTo("DOWN");
    assertThat(registry.get("idem.outbox.relay.running").gauge().value()).isZero();
  }

  /**
   * The claim fails for a while (the table renamed away under the running relay): a database
   * failure is charged to no row, the relay keeps running and says it is degraded, and publishes
   * everything once the table is back.
   */
  @Test
  void aDatabaseFailureIsChargedToNoRowAndTheRelayRunsOn() throws Exception {
    StoreTests.execute(pool, "ALTER TABLE idem_outbox RENAME TO idem_outbox_away");
    List<Long> published = new CopyOnWriteArrayList<>();
    OutboxRelay relay = started(OutboxRelay.builder(sessions, (OutboxPublisher) m -> published.add(m.id()))
        .pollInterval(Duration.ofMillis(20)).name("db-failure-relay").build());
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
        .until(() -> relay.health().consecutiveDatabaseFailures() >= 3);
    assertThat(relay.isRunning()).isTrue();
    assertThat(relay.health().status()).isEqualTo("DEGRADED");
    assertThat(relay.health().lastError()).contains("idem_outbox");
    StoreTests.execute(pool, "ALTER TABLE idem_outbox_away RENAME TO idem_outbox");
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      entries.add(entry("db-" + i, i % 2 == 0 ? "k" : null));
    }
    enqueue(entries);
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> published.size() == 10);
    await().atMost(Duration.ofSeconds(30)).until(() -> relay.health().consecutiveDatabaseFailures() == 0);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE attempts <> 1 OR sent_at IS NULL")).isZero();
    assertThat(relay.lastStats().failures()).isZero();
  }

  /**
   * The order the relay guarantees is id order among the rows committed when it claims, not
   * commit order: a transaction that took an id first and commits last is published after rows
   * with higher ids (OUTBOX.md, guarantee 5).
   */
  @Test
  void aRowCommittedAfterAHigherIdIsPublishedAfterIt() throws Exception {
    List<String> published = new CopyOnWriteArrayList<>();
    OutboxRelay relay = OutboxRelay.builder(sessions, (OutboxPublisher) m -> published.add(m.idempotencyKey())).build();
    try (SqlSession slow = sessions.openSession(false)) {
      assertThat(OUTBOX.enqueue(slow, entry("first-id", "order-9"))).isTrue(); // takes the lower id
      enqueue(List.of(entry("second-id", "order-9"))); // a concurrent transaction commits first
      assertThat(relay.relayOnce()).isEqualTo(1);
      slow.commit();
    }
    assertThat(relay.relayOnce()).isEqualTo(1);
    assertThat(published).containsExactly("second-id", "first-id");
  }

  /**
   * The recipe for a strict per-key order: each transaction locks the aggregate's row before it
   * enqueues, so the second one takes its id only after the first committed; ids then follow
   * commit order and the relay publishes in it.
   */
  @Test
  void lockingTheAggregateBeforeEnqueueingGivesCommitOrder() throws Exception {
    StoreTests.execute(pool, "CREATE TABLE orders (id text PRIMARY KEY)", "INSERT INTO orders VALUES ('order-9')");
    List<String> published = new CopyOnWriteArrayList<>();
    OutboxRelay relay = OutboxRelay.builder(sessions, (OutboxPublisher) m -> published.add(m.idempotencyKey())).build();
    Thread second;
    try (SqlSession first = sessions.openSession(false)) {
      StoreTests.execute(first, "SELECT id FROM orders WHERE id = 'order-9' FOR UPDATE");
      second = new Thread(() -> {
        try (SqlSession s = sessions.openSession(false)) {
          StoreTests.execute(s, "SELECT id FROM orders WHERE id = 'order-9' FOR UPDATE"); // waits for first
          OUTBOX.enqueue(s, entry("committed-second", "order-9"));
          s.commit();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, "second-writer");
      second.start();
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() ->
          StoreTests.count(pool, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
              + " AND application_name = '" + applicationName + "' AND query LIKE '%FROM orders%FOR UPDATE%'") > 0);
      assertThat(OUTBOX.enqueue(first, entry("committed-first", "order-9"))).isTrue();
      first.commit();
    }
    second.join(30_000);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox a JOIN idem_outbox b"
        + " ON a.idempotency_key = 'committed-first' AND b.idempotency_key = 'committed-second' AND a.id < b.id"))
        .as("ids follow commit order").isEqualTo(1);
    while (relay.relayOnce() > 0) {
      // drain
    }
    assertThat(published).containsExactly("committed-first", "committed-second");
  }

  /**
   * 200 rows of one ordering key: the relay takes up to batchSize rows of the key per claim and
   * claims again at once while rows are due. With a pollInterval of 10 minutes a single sleep
   * would outlast the wait below; the claims are counted too (4 full batches and one empty).
   */
  /**
   * V10: the claim's lease writes leased_until and leased_by, in no index and no index predicate,
   * on a table of fillfactor 50, so PostgreSQL updates the rows heap-only (HOT: no index entry
   * written) where the page has room: at least half of the leases here (28 of 40 measured).
   * Before V10 the lease moved next_attempt_at, an indexed column: not one lease was HOT. The sent mark is not (sent_at takes the row out of the partial indexes). The counters are
   * PostgreSQL's, flushed by each session when it goes idle (at most once a second): waited for.
   */
  @Test
  void aClaimsLeaseIsAHotUpdateWritingNoIndexEntry() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      entries.add(entry("hot-lease-" + i, null));
    }
    enqueue(entries);
    OutboxRelay relay = OutboxRelay.builder(sessions, batchesOnly(batch -> { })).batchSize(40).name("hot-lease").build();
    relays.add(relay);
    assertThat(relay.relayOnce()).isEqualTo(40);
    String counters = "FROM pg_stat_user_tables WHERE schemaname = '" + schema + "' AND relname = 'idem_outbox'";
    await().atMost(Duration.ofSeconds(30)).until(() -> StoreTests.count(pool, "SELECT n_tup_upd " + counters) >= 80);
    assertThat(StoreTests.count(pool, "SELECT n_tup_hot_upd " + counters))
        .as("HOT updates among the 40 leases and 40 sent marks (a lease is a little longer than the row"
            + " it replaces, so the last rows of a half-filled page may not fit)").isGreaterThanOrEqualTo(20);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL"
        + " AND leased_by IS NULL AND leased_until IS NULL")).isEqualTo(40);
  }

  @Test
  void aHotKeyDrainsWithoutSleepingBetweenBatchesInOrder() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      entries.add(entry(String.format("hot-%03d", i), "hot-key"));
    }
    enqueue(entries);
    List<Long> published = new CopyOnWriteArrayList<>();
    Duration pollInterval = Duration.ofMinutes(10);
    OutboxRelay relay = started(OutboxRelay.builder(sessions, (OutboxPublisher) m -> published.add(m.id()))
        .batchSize(50).pollInterval(pollInterval).name("hot-relay").build());

    await().atMost(pollInterval.dividedBy(2)).pollInterval(Duration.ofMillis(50)).until(() -> published.size() == 200);
    assertThat(published).isSorted().doesNotHaveDuplicates();
    await().atMost(Duration.ofSeconds(30)).until(() ->
        StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(relay.claimCount()).as("4 batches of 50 and the empty claim before the sleep").isLessThanOrEqualTo(5);
  }

  /**
   * Pipelining: while a batch is in flight the relay claims the next one, and that claim takes
   * no row of a key with a row in flight (leased: its head is not due); the rows of a batch are
   * still unsent while the publisher holds them (marked only once confirmed); publishAll calls
   * never overlap; every key's rows go out in id order, each once.
   */
  @Test
  void theNextBatchIsClaimedWhileOneIsInFlightWithoutItsKeys() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      entries.add(entry(String.format("pipe-%03d", i), i % 3 == 0 ? null : "key-" + (i % 5)));
    }
    enqueue(entries);
    List<OutboxMessage> published = new CopyOnWriteArrayList<>();
    List<String> problems = new CopyOnWriteArrayList<>();
    AtomicLong inFlight = new AtomicLong();
    AtomicLong overlappedClaims = new AtomicLong();
    OutboxPublisher publisher = batchesOnly(batch -> {
      if (inFlight.incrementAndGet() != 1) {
        problems.add("two publishAll calls at once");
      }
      List<Long> ids = batch.stream().map(OutboxMessage::id).toList();
      String idList = idList(batch);
      if (StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL AND id IN (" + idList + ")")
          != batch.size()) {
        problems.add("a row of the batch in flight is marked sent already: " + ids);
      }
      // Rows leased now that were never handed to the publisher: the next batch, claimed
      // while this one is in flight. Hold the batch until it is there (or 5 s: none was due).
      String seen = published.stream().map(m -> String.valueOf(m.id())).reduce(idList, (a, b) -> a + "," + b);
      String next = "FROM idem_outbox WHERE leased_by IS NOT NULL AND sent_at IS NULL AND id NOT IN (" + seen + ")";
      if (leasedBeside(seen, Duration.ofSeconds(5))) {
        overlappedClaims.incrementAndGet();
        List<String> keys = batch.stream().map(OutboxMessage::orderingKey).filter(k -> k != null).distinct()
            .map(k -> "'" + k + "'").toList();
        if (!keys.isEmpty() && StoreTests.count(pool, "SELECT count(*) " + next
            + " AND ordering_key IN (" + String.join(",", keys) + ")") > 0) {
          problems.add("a key of the batch in flight was claimed again: " + keys);
        }
      }
      published.addAll(batch);
      inFlight.decrementAndGet();
    });
    OutboxRelay relay = started(OutboxRelay.builder(sessions, publisher).batchSize(8)
        .pollInterval(Duration.ofMillis(50)).name("pipelined-relay").build());

    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() ->
        StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL") == 0);
    assertThat(problems).isEmpty();
    assertThat(overlappedClaims.get()).as("claims made while a batch was in flight").isPositive();
    assertThat(published).extracting(OutboxMessage::idempotencyKey).doesNotHaveDuplicates().hasSize(60);
    Map<String, List<Long>> perKey = new HashMap<>();
    for (OutboxMessage m : published) {
      if (m.orderingKey() != null) {
        perKey.computeIfAbsent(m.orderingKey(), k -> new ArrayList<>()).add(m.id());
      }
    }
    assertThat(perKey).hasSize(5).allSatisfy((key, ids) -> assertThat(ids).as(key).isSorted());
    await().atMost(Duration.ofSeconds(10)).until(() -> relay.lastStats().published() == 60);
  }

  /**
   * close() while a batch is in flight and the next one is claimed beside it: the batch in flight
   * is finished and marked sent, the claimed one is released (due again, nothing charged), and
   * no row stays leased.
   */
  @Test
  void closeMarksTheBatchInFlightAndReleasesTheOneClaimedBesideIt() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      entries.add(entry(String.format("close-%03d", i), null));
    }
    enqueue(entries);
    CountDownLatch nextClaimed = new CountDownLatch(1);
    CountDownLatch closed = new CountDownLatch(1);
    List<OutboxMessage> published = new CopyOnWriteArrayList<>();
    OutboxPublisher publisher = batchesOnly(batch -> {
      String ids = idList(batch);
      if (leasedBeside(ids, Duration.ofSeconds(10))) {
        nextClaimed.countDown();
      }
      closed.await(10, TimeUnit.SECONDS); // still in flight when close() is called
      published.addAll(batch);
    });
    OutboxRelay relay = started(OutboxRelay.builder(sessions, publisher).batchSize(10)
        .pollInterval(Duration.ofMillis(50)).name("closing-relay").build());
    assertThat(nextClaimed.await(20, TimeUnit.SECONDS)).isTrue();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE leased_by IS NOT NULL"))
        .as("the batch in flight and the one claimed beside it").isEqualTo(20);
    Thread closer = new Thread(relay::close);
    closer.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> !relay.isRunning());
    closed.countDown();
    closer.join(Duration.ofSeconds(30).toMillis());
    assertThat(closer.isAlive()).isFalse();
    assertThat(published).hasSize(10);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL")).isEqualTo(10);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE leased_by IS NOT NULL")).isZero();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL AND attempts = 0"
        + " AND parked_at IS NULL AND next_attempt_at <= now()")).as("due again, uncharged").isEqualTo(30);
  }

  /**
   * The claim at 100,000 unsent rows: 100,000 behind one parked head, plus a few due rows of
   * other keys and without a key. EXPLAIN (ANALYZE, BUFFERS) of both statements of the claim:
   * no sequential scan of the outbox, and the buffers touched stay far below the table's pages
   * (the blocked rows are not read).
   */
  @Test
  void theClaimReadsAnIndexNotTheBlockedBacklog() throws Exception {
    StoreTests.execute(pool,
        "INSERT INTO idem_outbox (idempotency_key, destination, ordering_key, payload, parked_at)"
            + " VALUES ('head', 'receipts', 'blocked', '\\x00', now())",
        "INSERT INTO idem_outbox (idempotency_key, destination, ordering_key, payload)"
            + " SELECT 'behind-' || g, 'receipts', 'blocked', decode(repeat('ab', 100), 'hex')"
            + " FROM generate_series(1, 100000) g",
        "INSERT INTO idem_outbox (idempotency_key, destination, ordering_key, payload)"
            + " SELECT 'other-' || g, 'receipts', 'key-' || (g % 5), '\\x00' FROM generate_series(1, 10) g",
        "INSERT INTO idem_outbox (idempotency_key, destination, payload)"
            + " SELECT 'free-' || g, 'receipts', '\\x00' FROM generate_series(1, 10) g",
        "ANALYZE idem_outbox");
    long pages = StoreTests.count(pool, "SELECT relpages FROM pg_class WHERE oid = 'idem_outbox'::regclass");
    assertThat(pages).as("the table is large enough to tell a scan").isGreaterThan(2000);

    List<String> keys = new ArrayList<>();
    try (SqlSession session = sessions.openSession(false)) {
      String ns = OUTBOX.namespace(session);
      Map<String, Object> headParams = new HashMap<>();
      headParams.put("after", null);
      headParams.put("maxKeys", 100);
      JsonNode heads = explain(session, ns + ".heads", headParams);
      assertIndexOnly(heads, pages);
      for (Map<String, Object> head : session.<Map<String, Object>>selectList(ns + ".heads", headParams)) {
        if (Boolean.TRUE.equals(head.get("due"))) {
          keys.add((String) head.get("orderingKey"));
        }
      }
      assertThat(keys).containsExactlyInAnyOrder("key-0", "key-1", "key-2", "key-3", "key-4");
      JsonNode claim = explain(session, ns + ".claim", Map.of("keys", keys, "maxRows", 100,
          "leaseMillis", 60_000L, "relay", "explain"));
      assertIndexOnly(claim, pages);
      assertThat(claim.path(0).path("Plan").path("Actual Rows").asLong()).as("rows claimed").isEqualTo(20);
      session.rollback(true); // EXPLAIN ANALYZE ran the claim's UPDATE: undo it
    }
    List<Long> published = new CopyOnWriteArrayList<>();
    OutboxRelay relay = OutboxRelay.builder(sessions, (OutboxPublisher) m -> published.add(m.id())).build();
    assertThat(relay.relayOnce()).isEqualTo(20);
    assertThat(relay.relayOnce()).as("the rest is behind the parked head").isZero();
  }

  /**
   * A drained outbox analyzed (the statistics see no unsent row), then a burst of 20,000 rows:
   * the sent mark, a charge and a release of claimed rows find them by primary key. With {@code
   * sent_at IS NULL} in their WHERE the planner took the ordering index (its predicate) as a tiny
   * index and scanned every unsent row for each mark. EXPLAIN (ANALYZE, BUFFERS) of each: its
   * one scan is of the primary key, touching a few buffers per row.
   */
  @Test
  void theMarksFindTheirRowsByPrimaryKeyWhenTheStatisticsSawNoUnsentRow() throws Exception {
    StoreTests.execute(pool,
        "INSERT INTO idem_outbox (idempotency_key, destination, payload, sent_at)"
            + " SELECT 'sent-' || g, 'receipts', decode(repeat('ab', 100), 'hex'), now() FROM generate_series(1, 20000) g",
        "ANALYZE idem_outbox",
        "INSERT INTO idem_outbox (idempotency_key, destination, ordering_key, payload)"
            + " SELECT 'burst-' || g, 'receipts', CASE WHEN g % 2 = 0 THEN 'key-' || (g % 7) END,"
            + " decode(repeat('ab', 100), 'hex') FROM generate_series(1, 20000) g");
    List<Long> ids = new ArrayList<>();
    try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT id FROM idem_outbox WHERE sent_at IS NULL ORDER BY id DESC LIMIT 100");
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(rs.getLong(1));
      }
    }
    try (SqlSession session = sessions.openSession(false)) {
      String ns = OUTBOX.namespace(session);
      assertByPrimaryKey(explain(session, ns + ".markSent", Map.of("ids", ids)));
      assertByPrimaryKey(explain(session, ns + ".release", Map.of("ids", ids, "relay", "explain")));
      assertByPrimaryKey(explain(session, ns + ".markFailed", Map.of("id", ids.get(0), "error", "e", "backoffMillis",
          1000L, "park", false, "relay", "explain")));
      session.rollback(true); // EXPLAIN ANALYZE ran the updates: undo them
    }
  }

  /** The plan of one mapped statement, run for real inside the session's (rolled back) transaction. */
  private static JsonNode explain(SqlSession session, String statement, Map<String, Object> params) throws Exception {
    BoundSql bound = session.getConfiguration().getMappedStatement(statement).getBoundSql(params);
    Connection c = session.getConnection();
    try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + bound.getSql())) {
      int i = 1;
      for (ParameterMapping mapping : bound.getParameterMappings()) {
        String property = mapping.getProperty();
        Object value = bound.hasAdditionalParameter(property) ? bound.getAdditionalParameter(property) : params.get(property);
        ps.setObject(i++, value);
      }
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return new ObjectMapper().readTree(rs.getString(1));
      }
    }
  }

  private static void assertIndexOnly(JsonNode plan, long tablePages) {
    List<String> scans = new ArrayList<>();
    AtomicLong buffers = new AtomicLong();
    walk(plan.path(0).path("Plan"), scans);
    JsonNode top = plan.path(0).path("Plan");
    buffers.set(top.path("Shared Hit Blocks").asLong() + top.path("Shared Read Blocks").asLong());
    assertThat(scans).as("scans of the plan " + plan.toPrettyString())
        .noneMatch(s -> s.startsWith("Seq Scan")).anyMatch(s -> s.contains("Index"));
    assertThat(buffers.get()).as("buffers touched, against " + tablePages + " table pages: " + plan.toPrettyString())
        .isLessThan(Math.min(1000, tablePages / 4));
  }

  /** The rows an update writes are read by the primary key only: a few buffers per row. */
  private static void assertByPrimaryKey(JsonNode plan) {
    List<String> scans = new ArrayList<>();
    JsonNode top = plan.path(0).path("Plan");
    walk(top, scans);
    assertThat(scans).as("scans of the plan " + plan.toPrettyString())
        .containsExactly("Index Scan on idem_outbox idem_outbox_pkey");
    JsonNode scan = top.path("Plans").path(0);
    assertThat(scan.path("Shared Hit Blocks").asLong() + scan.path("Shared Read Blocks").asLong())
        .as("buffers the scan touched: " + plan.toPrettyString()).isLessThan(1000);
  }

  private static void walk(JsonNode node, List<String> scans) {
    String type = node.path("Node Type").asText();
    if (type.contains("Scan")) {
      scans.add(type + " on " + node.path("Relation Name").asText() + " " + node.path("Index Name").asText());
    }
    for (JsonNode child : node.path("Plans")) {
      walk(child, scans);
    }
  }
}
