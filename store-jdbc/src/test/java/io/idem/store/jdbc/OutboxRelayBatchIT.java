package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.NonRetryableException;
import io.idem.RetryPolicy;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The relay with a batching publisher ({@link OutboxPublisher#publishAll} overridden) on the real
 * PostgreSQL: one call per batch outside any transaction, the sent rows marked in one statement,
 * a failed row charged and its key's later rows released uncharged while other keys are sent, an
 * outage (a failed row classified so, or a throw of publishAll) charged to no row. {@link
 * MariaDbOutboxRelayBatchIT} runs every test on MariaDB.
 */
class OutboxRelayBatchIT {
  private static final Outbox OUTBOX = Outbox.ofDefaults();
  private static final String APPLICATION = "idem-outbox-batch-it";
  private HikariDataSource pool;
  private SqlSessionFactory sessions;

  /** The database of the test (MariaDbOutboxRelayBatchIT: MariaDB). */
  OutboxTestDatabase database() {
    return OutboxTestDatabase.POSTGRESQL;
  }

  @BeforeEach
  void setUp() {
    pool = database().newPool("outbox_batch", APPLICATION);
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
  }

  @AfterEach
  void tearDown() {
    pool.close();
  }

  /**
   * Batches as a broker publisher does: each call recorded, each row's result from {@code
   * outcome} (null: sent), a key stopped at its first failure; checks that no relay transaction
   * is open while it "waits for the broker".
   */
  final class BatchingPublisher implements OutboxPublisher {
    final List<List<Long>> calls = new CopyOnWriteArrayList<>();
    final List<Long> sent = new CopyOnWriteArrayList<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    final Map<String, Throwable> failing = new ConcurrentHashMap<>();
    volatile Function<OutboxMessage, OutboxPublishResult> outcome = m -> {
      Throwable failure = failing.get(m.idempotencyKey());
      return failure == null ? OutboxPublishResult.sent(m) : OutboxPublishResult.failed(m, failure);
    };
    volatile Exception throwFromPublishAll;
    volatile boolean keepKeysGoing;

    @Override
    public void publish(OutboxMessage message) {
      throw new AssertionError("the relay publishes a batching publisher's rows with publishAll");
    }

    @Override
    public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
      calls.add(messages.stream().map(OutboxMessage::id).toList());
      long open = openTransactionsOfTheRelay();
      if (open > 0) {
        violations.add(open + " relay transaction(s) open during publishAll");
      }
      if (throwFromPublishAll != null) {
        throw throwFromPublishAll;
      }
      List<OutboxPublishResult> results = new ArrayList<>();
      java.util.Set<String> stopped = new java.util.HashSet<>();
      for (OutboxMessage m : messages) {
        if (!keepKeysGoing && m.orderingKey() != null && stopped.contains(m.orderingKey())) {
          results.add(OutboxPublishResult.skipped(m));
          continue;
        }
        OutboxPublishResult r = outcome.apply(m);
        if (r.status() == OutboxPublishResult.Status.SENT) {
          sent.add(m.id());
        } else if (m.orderingKey() != null) {
          stopped.add(m.orderingKey());
        }
        results.add(r);
      }
      return results;
    }
  }

  private long openTransactionsOfTheRelay() throws Exception {
    return StoreTests.count(pool, database().openTransactions(APPLICATION));
  }

  private void enqueue(String... keysAndOrderingKeys) {
    try (SqlSession session = sessions.openSession(false)) {
      for (int i = 0; i < keysAndOrderingKeys.length; i += 2) {
        String key = keysAndOrderingKeys[i];
        assertThat(OUTBOX.enqueue(session, new OutboxEntry(key, "receipts", keysAndOrderingKeys[i + 1],
            key.getBytes(StandardCharsets.UTF_8), Map.of()))).isTrue();
      }
      session.commit();
    }
  }

  private Map<String, Map<String, Object>> rows() throws Exception {
    Map<String, Map<String, Object>> rows = new HashMap<>();
    try (Connection c = pool.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT idempotency_key, id, attempts, sent_at IS NOT NULL AS sent,"
            + " parked_at IS NOT NULL AS parked, leased_by IS NOT NULL AS leased, last_error,"
            + " next_attempt_at <= " + database().now() + " AS due FROM idem_outbox")) {
      while (rs.next()) {
        Map<String, Object> row = new HashMap<>();
        row.put("id", rs.getLong("id"));
        row.put("attempts", rs.getInt("attempts"));
        row.put("last_error", rs.getString("last_error"));
        for (String col : List.of("sent", "parked", "leased", "due")) {
          row.put(col, rs.getBoolean(col)); // MariaDB answers 1 or 0
        }
        rows.put(rs.getString("idempotency_key"), row);
      }
    }
    return rows;
  }

  private OutboxRelay relay(OutboxPublisher publisher) {
    return OutboxRelay.builder(sessions, publisher).batchSize(20).pollInterval(Duration.ofMillis(20))
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMinutes(1)).jitter(0).build())
        .build();
  }

  @Test
  void aBatchIsOneCallOutsideAnyTransactionAndItsSentRowsOneStatement() throws Exception {
    enqueue("a1", "A", "b1", "B", "a2", "A", "free", null, "b2", "B", "a3", "A");
    BatchingPublisher publisher = new BatchingPublisher();
    OutboxRelay relay = relay(publisher);

    assertThat(relay.relayOnce()).isEqualTo(6);

    assertThat(publisher.calls).as("one publishAll, in id order").hasSize(1);
    assertThat(publisher.calls.get(0)).isSorted().hasSize(6);
    assertThat(publisher.violations).isEmpty();
    assertThat(rows().values()).allSatisfy(r -> assertThat(r).containsEntry("sent", true)
        .containsEntry("attempts", 1).containsEntry("leased", false));
    assertThat(StoreTests.count(pool, "SELECT count(DISTINCT sent_at) FROM idem_outbox"))
        .as("marked sent in one statement (one transaction's now())").isEqualTo(1);
    assertThat(relay.lastStats().published()).isEqualTo(6);
    assertThat(relay.relayOnce()).isZero();
  }

  /**
   * Mid-batch, the second row of key A fails: it is charged one attempt, A's later rows are
   * released uncharged (held behind it), key B and the unordered row are sent; a non-retryable
   * failure in key C parks that row at once. Nothing is lost or reordered: after the backoff,
   * A's rows go out in id order.
   */
  @Test
  void aFailedRowIsChargedItsKeyStopsAndOtherKeysAreSent() throws Exception {
    enqueue("a1", "A", "a2", "A", "b1", "B", "a3", "A", "free", null, "c1", "C", "b2", "B", "a4", "A", "c2", "C");
    BatchingPublisher publisher = new BatchingPublisher();
    publisher.failing.put("a2", new IllegalStateException("a2 refused this time"));
    publisher.failing.put("c1", new NonRetryableException("c1 can never be sent"));
    OutboxRelay relay = relay(publisher);

    assertThat(relay.relayOnce()).isEqualTo(9);

    Map<String, Map<String, Object>> rows = rows();
    for (String key : List.of("a1", "b1", "free", "b2")) {
      assertThat(rows.get(key)).as(key).containsEntry("sent", true).containsEntry("attempts", 1);
    }
    assertThat(rows.get("a2")).containsEntry("sent", false).containsEntry("attempts", 1)
        .containsEntry("parked", false).containsEntry("due", false).containsEntry("leased", false);
    assertThat((String) rows.get("a2").get("last_error")).contains("a2 refused this time");
    assertThat(rows.get("c1")).containsEntry("parked", true).containsEntry("attempts", 1);
    for (String key : List.of("a3", "a4", "c2")) {
      assertThat(rows.get(key)).as(key + ": held behind its key's failure, uncharged")
          .containsEntry("sent", false).containsEntry("attempts", 0).containsEntry("due", true)
          .containsEntry("leased", false).containsEntry("parked", false);
    }
    assertThat(relay.lastStats().failures()).isEqualTo(2);
    assertThat(relay.health().destinationUnavailableUntil()).as("a row failure is no outage").isNull();
    assertThat(relay.relayOnce()).as("A waits for a2's backoff, C for its parked head").isZero();

    publisher.failing.clear();
    StoreTests.execute(pool, "UPDATE idem_outbox SET next_attempt_at = " + database().now() + " WHERE sent_at IS NULL");
    assertThat(relay.relayOnce()).isEqualTo(3);
    assertThat(publisher.sent.subList(4, 7)).as("A's rows in id order")
        .containsExactly((Long) rows.get("a2").get("id"), (Long) rows.get("a3").get("id"), (Long) rows.get("a4").get("id"));
    assertThat(rows().get("a2")).containsEntry("sent", true).containsEntry("attempts", 2);
  }

  /** A publisher that reports a second failure of a stopped key: only the key's first is charged. */
  @Test
  void onlyTheFirstFailureOfAKeyIsCharged() throws Exception {
    enqueue("a1", "A", "a2", "A", "a3", "A");
    BatchingPublisher publisher = new BatchingPublisher();
    publisher.keepKeysGoing = true;
    publisher.failing.put("a1", new IllegalStateException("a1 failed"));
    publisher.failing.put("a2", new IllegalStateException("a2 failed"));
    OutboxRelay relay = relay(publisher);

    relay.relayOnce();

    Map<String, Map<String, Object>> rows = rows();
    assertThat(rows.get("a1")).containsEntry("attempts", 1).containsEntry("sent", false);
    assertThat(rows.get("a2")).containsEntry("attempts", 0).containsEntry("due", true);
    assertThat(rows.get("a3")).as("confirmed, so marked sent").containsEntry("sent", true);
    assertThat(relay.lastStats().failures()).isEqualTo(1);
  }

  /**
   * Mid-batch the destination goes away: the rows whose result is an outage (a timeout) are
   * released uncharged, those confirmed before are sent, the circuit opens once; a throw of
   * publishAll charges no row of the batch either.
   */
  @Test
  void anOutageMidBatchChargesNoRowAndOpensTheCircuit() throws Exception {
    enqueue("a1", "A", "b1", "B", "a2", "A", "free", null, "b2", "B");
    BatchingPublisher publisher = new BatchingPublisher();
    long firstTimedOut = (Long) rows().get("a2").get("id");
    publisher.outcome = m -> m.id() < firstTimedOut ? OutboxPublishResult.sent(m)
        : OutboxPublishResult.failed(m, new TimeoutException("no acknowledgement within 500 ms"));
    OutboxRelay relay = relay(publisher);

    assertThat(relay.relayOnce()).isEqualTo(5);

    Map<String, Map<String, Object>> rows = rows();
    assertThat(rows.get("a1")).containsEntry("sent", true);
    assertThat(rows.get("b1")).containsEntry("sent", true);
    for (String key : List.of("a2", "free", "b2")) {
      assertThat(rows.get(key)).as(key).containsEntry("sent", false).containsEntry("attempts", 0)
          .containsEntry("due", true).containsEntry("leased", false).containsEntry("parked", false);
    }
    assertThat(relay.lastStats().failures()).isZero();
    assertThat(relay.health().destinationUnavailableUntil()).isNotNull();
    assertThat(relay.health().lastError()).contains("TimeoutException");

    publisher.throwFromPublishAll = new java.io.IOException("connection refused");
    assertThat(relay.relayOnce()).isEqualTo(3);
    assertThat(rows().values()).filteredOn(r -> !(Boolean) r.get("sent"))
        .hasSize(3).allSatisfy(r -> assertThat(r).containsEntry("attempts", 0).containsEntry("due", true)
            .containsEntry("leased", false));
    assertThat(relay.health().lastError()).contains("connection refused");
    assertThat(relay.lastStats().failures()).isZero();

    publisher.throwFromPublishAll = null;
    publisher.outcome = OutboxPublishResult::sent;
    assertThat(relay.relayOnce()).isEqualTo(3);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL OR attempts <> 1")).isZero();
    assertThat(publisher.violations).isEmpty();
  }

  /** A result list that misses rows: those are due again, uncharged, nothing else is lost. */
  @Test
  void rowsWithoutAResultAreReleasedUncharged() throws Exception {
    enqueue("a1", "A", "b1", "B");
    OutboxPublisher partial = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) {
        throw new AssertionError("not called");
      }

      @Override
      public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) {
        return List.of(OutboxPublishResult.sent(messages.get(0)));
      }
    };
    relay(partial).relayOnce();
    Map<String, Map<String, Object>> rows = rows();
    assertThat(rows.get("a1")).containsEntry("sent", true);
    assertThat(rows.get("b1")).containsEntry("sent", false).containsEntry("attempts", 0).containsEntry("due", true);
  }
}
