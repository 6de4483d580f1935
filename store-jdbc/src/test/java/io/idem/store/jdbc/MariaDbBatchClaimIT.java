package io.idem.store.jdbc;

import static io.idem.store.jdbc.MariaDbRaces.sha256;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.exceptions.PersistenceException;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The multi-row claim on MariaDB ({@link MariaDbBatchClaim}: one {@code INSERT IGNORE … RETURNING}
 * for the batch) at InnoDB's default REPEATABLE READ, against the real server: the answers of one
 * claim per key (new, duplicate, conflict, a key twice in the batch), the races one claim per key
 * goes through (a key held by another open transaction that then commits or rolls back while the
 * batch waits; the claim lock timeout; two batches sharing keys, in opposite orders), the number
 * of statements per batch (constant: counted by the server, {@code Questions} of the session), and
 * the guard on what IGNORE turns into warnings (a table on which a key would be stored wrong or
 * skipped: the claim is refused, nothing is stored). Races synchronised on
 * information_schema.INNODB_TRX, never on sleeps.
 */
class MariaDbBatchClaimIT {
  private static MariaDbRaces races;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() {
    races = new MariaDbRaces("batch_claim");
    store = races.store;
  }

  @AfterAll
  static void tearDown() {
    races.close();
  }

  private static List<IdempotencyKey> keys(String prefix, int n) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    List<IdempotencyKey> keys = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      keys.add(new IdempotencyKey("batch", prefix + "-" + run + "-" + String.format("%04d", i), KeySource.HEADER));
    }
    return keys;
  }

  private static List<byte[]> same(String payload, int n) throws Exception {
    return Collections.nCopies(n, sha256(payload));
  }

  private static List<ClaimResult> claimAllCommitted(List<IdempotencyKey> keys, List<byte[]> fingerprints)
      throws Exception {
    return store.inTransaction(tx -> store.claimAll(tx, keys, fingerprints));
  }

  private static long stored(String table, String keyPrefix) throws Exception {
    return StoreTests.count(races.pool, "SELECT count(*) FROM " + table + " WHERE idempotency_key LIKE '"
        + keyPrefix + "%'");
  }

  @Test
  void aMixedBatchIsAnsweredAsOneClaimPerKeyWouldAnswerIt() throws Exception {
    List<IdempotencyKey> k = keys("mixed", 6);
    claimAllCommitted(List.of(k.get(1), k.get(2)), List.of(sha256("p"), sha256("p")));
    // new, duplicate, conflict, new, a new key twice (same payload: a duplicate of the first;
    // another payload: a conflict with it), a stored key twice (each compared with the marker)
    List<IdempotencyKey> batch = List.of(k.get(5), k.get(1), k.get(2), k.get(0), k.get(4), k.get(4),
        k.get(4), k.get(2), k.get(1));
    List<byte[]> fingerprints = List.of(sha256("p"), sha256("p"), sha256("other"), sha256("p"),
        sha256("first"), sha256("first"), sha256("second"), sha256("p"), sha256("other"));
    assertThat(claimAllCommitted(batch, fingerprints)).containsExactly(ClaimResult.CLAIMED,
        ClaimResult.DUPLICATE, ClaimResult.CONFLICT, ClaimResult.CLAIMED, ClaimResult.CLAIMED,
        ClaimResult.DUPLICATE, ClaimResult.CONFLICT, ClaimResult.DUPLICATE, ClaimResult.CONFLICT);
    // what the first occurrences stored: the same again is all duplicates
    assertThat(claimAllCommitted(List.of(k.get(0), k.get(4), k.get(5)),
        List.of(sha256("p"), sha256("first"), sha256("p")))).containsOnly(ClaimResult.DUPLICATE);
    assertThat(stored("idem_processed_events", "mixed-")).isEqualTo(5);
  }

  @Test
  void theLongestKeysAndKeysBeyondTheBasicPlaneComeBackExactlyAsSent() throws Exception {
    // the guard compares what RETURNING gives back with what was sent: a key the column and the
    // connection hold (utf8mb4) must come back equal, or every such batch would be refused
    String run = UUID.randomUUID().toString().substring(0, 8);
    String group = ("g" + run + "-é😀").repeat(20).substring(0, IdempotencyKey.MAX_CONSUMER_GROUP_LENGTH);
    List<IdempotencyKey> batch = List.of(
        new IdempotencyKey(group, "😀".repeat(IdempotencyKey.MAX_LENGTH / 2), KeySource.PAYLOAD),
        new IdempotencyKey(group, ("x" + run).repeat(100).substring(0, IdempotencyKey.MAX_LENGTH), KeySource.HEADER),
        new IdempotencyKey(group, "e\u0301 é trailing ", KeySource.CLOUDEVENTS),
        new IdempotencyKey(group, "e\u0301 é trailing", KeySource.CLOUDEVENTS));
    assertThat(claimAllCommitted(batch, same("p", 4))).containsOnly(ClaimResult.CLAIMED);
    assertThat(claimAllCommitted(batch, same("p", 4))).containsOnly(ClaimResult.DUPLICATE);
    assertThat(batch).allMatch(store::isProcessed);
  }

  @Test
  void aBatchLargerThanOneStatementIsClaimedWhole() throws Exception {
    int n = MariaDbBatchClaim.MAX_ROWS * 2 + 17;
    List<IdempotencyKey> k = keys("large", n);
    claimAllCommitted(List.of(k.get(1500)), List.of(sha256("other")));
    List<IdempotencyKey> shuffled = new ArrayList<>(k);
    Collections.shuffle(shuffled, new Random(7));
    List<ClaimResult> results = claimAllCommitted(shuffled, same("p", n));
    for (int i = 0; i < n; i++) {
      assertThat(results.get(i)).as(shuffled.get(i).value())
          .isEqualTo(shuffled.get(i).equals(k.get(1500)) ? ClaimResult.CONFLICT : ClaimResult.CLAIMED);
    }
    assertThat(stored("idem_processed_events", "large-")).isEqualTo(n);
  }

  /** Statements the server counted on this session so far ({@code Questions}), this query included. */
  private static long questions(SqlSession session) throws Exception {
    try (Statement s = session.getConnection().createStatement();
        ResultSet rs = s.executeQuery("SHOW SESSION STATUS LIKE 'Questions'")) {
      rs.next();
      return rs.getLong(2);
    }
  }

  /** The statements {@code claimAll} sends, counted by the server (its own counting query not included). */
  private static long statementsOf(List<IdempotencyKey> keys, List<byte[]> fingerprints) throws Exception {
    return store.inTransaction(tx -> {
      long before = questions(tx);
      store.claimAll(tx, keys, fingerprints);
      return questions(tx) - before - 1;
    });
  }

  @Test
  void aBatchCostsTheSameStatementsWhateverItsSize() throws Exception {
    for (int n : List.of(1, 10, 100, MariaDbBatchClaim.MAX_ROWS)) {
      List<IdempotencyKey> k = keys("count" + n, n);
      assertThat(statementsOf(k, same("p", n))).as("%s new keys: the INSERT", n).isEqualTo(1);
      assertThat(statementsOf(k, same("p", n)))
          .as("%s stored keys: the INSERT, its warnings and the locking read", n).isEqualTo(3);
      List<IdempotencyKey> mixed = new ArrayList<>(k.subList(0, n / 2));
      mixed.addAll(keys("count-new" + n, n - n / 2));
      assertThat(statementsOf(mixed, same("p", n))).as("%s keys, half of them stored", n)
          .isEqualTo(n / 2 == 0 ? 1 : 3);
    }
    List<IdempotencyKey> twoStatements = keys("count-two", MariaDbBatchClaim.MAX_ROWS + 1);
    assertThat(statementsOf(twoStatements, same("p", twoStatements.size()))).isEqualTo(2);
  }

  /**
   * Another transaction claims {@code held} with {@code theirPayload} and stays open; a batch of
   * {@code batch} (payload "mine", read first when {@code readFirst}: its REPEATABLE READ snapshot
   * then predates the other's commit) waits for it; then the other commits or rolls back.
   */
  private static List<ClaimResult> raceOn(IdempotencyKey held, List<IdempotencyKey> batch, String theirPayload,
      boolean theyCommit, boolean readFirst) throws Exception {
    try (SqlSession other = races.sessions.openSession(false)) {
      assertThat(store.claim(other, held, sha256(theirPayload))).isEqualTo(ClaimResult.CLAIMED);
      Future<List<ClaimResult>> claimed = races.threads.submit(() -> store.<List<ClaimResult>>inTransaction(tx -> {
        if (readFirst) {
          tx.selectList(namespace() + ".exists", java.util.Map.of("consumerGroup", "batch", "key", held.value()));
        }
        return store.claimAll(tx, batch, same("mine", batch.size()));
      }));
      races.awaitLockWaits(held.value(), 1);
      if (theyCommit) {
        other.commit(true);
      } else {
        other.rollback(true);
      }
      return claimed.get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aKeyCommittedWithAnotherPayloadWhileTheBatchWaitedIsAConflictTheRestClaimed() throws Exception {
    List<IdempotencyKey> k = keys("race-conflict", 5);
    assertThat(raceOn(k.get(2), List.of(k.get(4), k.get(2), k.get(0), k.get(3), k.get(1)), "theirs", true, false))
        .containsExactly(ClaimResult.CLAIMED, ClaimResult.CONFLICT, ClaimResult.CLAIMED, ClaimResult.CLAIMED,
            ClaimResult.CLAIMED);
  }

  @Test
  void aKeyCommittedWithTheSamePayloadWhileTheBatchWaitedIsADuplicate() throws Exception {
    List<IdempotencyKey> k = keys("race-duplicate", 3);
    assertThat(raceOn(k.get(1), k, "mine", true, false))
        .containsExactly(ClaimResult.CLAIMED, ClaimResult.DUPLICATE, ClaimResult.CLAIMED);
  }

  @Test
  void aKeyCommittedAfterTheBatchsSnapshotIsStillSeenByItsLockingRead() throws Exception {
    List<IdempotencyKey> k = keys("race-snapshot", 3);
    assertThat(raceOn(k.get(1), k, "theirs", true, true))
        .containsExactly(ClaimResult.CLAIMED, ClaimResult.CONFLICT, ClaimResult.CLAIMED);
  }

  @Test
  void aKeyRolledBackWhileTheBatchWaitedIsClaimed() throws Exception {
    List<IdempotencyKey> k = keys("race-rollback", 3);
    assertThat(raceOn(k.get(1), k, "theirs", false, false)).containsOnly(ClaimResult.CLAIMED);
    assertThat(stored("idem_processed_events", "race-rollback-")).isEqualTo(3);
  }

  @Test
  void aBatchWaitingPastTheClaimLockTimeoutIsATransactionRetryAndClaimsNothing() throws Exception {
    MyBatisProcessedEventStore impatient = MyBatisProcessedEventStore.builder(races.sessions)
        .claimLockTimeout(Duration.ofSeconds(1)).build();
    List<IdempotencyKey> k = keys("timeout", 3);
    try (SqlSession other = races.sessions.openSession(false)) {
      store.claim(other, k.get(2), sha256("theirs"));
      assertThatThrownBy(() -> impatient.inTransaction(tx -> impatient.claimAll(tx, k, same("mine", 3))))
          .isInstanceOf(TransactionRetryException.class)
          .hasMessageContaining("3 keys (one batch)")
          .hasMessageContaining("innodb_lock_wait_timeout 1 s")
          .hasMessageContaining("1205");
      other.rollback(true);
    }
    assertThat(stored("idem_processed_events", "timeout-")).isZero();
  }

  /**
   * Two batches of overlapping keys, each in an order of its own, started together, again and
   * again: every key is claimed by exactly one of them, and a failure is only ever a transaction
   * retry (1213 or 1205, classified), after which the batch is run again.
   */
  @Test
  void overlappingBatchesFromTwoThreadsClaimEachKeyOnceAndOnlyEverAskForRetries() throws Exception {
    for (int round = 0; round < 10; round++) {
      List<IdempotencyKey> k = keys("overlap" + round, 150);
      List<IdempotencyKey> left = new ArrayList<>(k.subList(0, 100));
      List<IdempotencyKey> right = new ArrayList<>(k.subList(50, 150));
      Collections.shuffle(left, new Random(round));
      Collections.shuffle(right, new Random(-round));
      Collections.reverse(right);
      CountDownLatch start = new CountDownLatch(2);
      List<Object> retries = Collections.synchronizedList(new ArrayList<>());
      Future<List<ClaimResult>> a = races.threads.submit(claimUntilDone(left, start, retries));
      Future<List<ClaimResult>> b = races.threads.submit(claimUntilDone(right, start, retries));
      List<ClaimResult> fromA = a.get(60, TimeUnit.SECONDS);
      List<ClaimResult> fromB = b.get(60, TimeUnit.SECONDS);
      for (IdempotencyKey key : k) {
        int claimed = 0;
        if (left.contains(key) && fromA.get(left.indexOf(key)) == ClaimResult.CLAIMED) {
          claimed++;
        }
        if (right.contains(key) && fromB.get(right.indexOf(key)) == ClaimResult.CLAIMED) {
          claimed++;
        }
        assertThat(claimed).as("round %s, key %s (retries %s)", round, key.value(), retries).isEqualTo(1);
      }
      System.out.println("overlapping batches, round " + round + ": " + retries.size() + " transaction retries "
          + retries);
      assertThat(fromA).doesNotContain(ClaimResult.CONFLICT);
      assertThat(fromB).doesNotContain(ClaimResult.CONFLICT);
      assertThat(stored("idem_processed_events", "overlap" + round + "-")).isEqualTo(150);
    }
  }

  /**
   * A batch claimed by another transaction that stays open; a second batch sharing half its keys
   * (in the opposite order) waits for it — observed — then, once the first commits, finds the
   * shared keys duplicates and claims the rest; once it rolls back, claims them all.
   */
  @Test
  void aBatchWaitingForAnOverlappingOpenBatchAnswersFromItsOutcome() throws Exception {
    for (boolean theyCommit : List.of(true, false)) {
      List<IdempotencyKey> k = keys("held-batch-" + theyCommit, 40);
      List<IdempotencyKey> theirs = k.subList(0, 30);
      List<IdempotencyKey> mine = new ArrayList<>(k.subList(10, 40));
      Collections.reverse(mine);
      try (SqlSession other = races.sessions.openSession(false)) {
        assertThat(store.claimAll(other, theirs, same("p", 30))).containsOnly(ClaimResult.CLAIMED);
        Future<List<ClaimResult>> waiting = races.threads.submit(
            () -> store.<List<ClaimResult>>inTransaction(tx -> store.claimAll(tx, mine, same("p", 30))));
        races.awaitLockWaits(k.get(10).value(), 1);
        if (theyCommit) {
          other.commit(true);
        } else {
          other.rollback(true);
        }
        List<ClaimResult> results = waiting.get(30, TimeUnit.SECONDS);
        for (int i = 0; i < mine.size(); i++) {
          boolean shared = theirs.contains(mine.get(i));
          assertThat(results.get(i)).as("%s, %s", theyCommit ? "committed" : "rolled back", mine.get(i).value())
              .isEqualTo(shared && theyCommit ? ClaimResult.DUPLICATE : ClaimResult.CLAIMED);
        }
      }
      assertThat(stored("idem_processed_events", "held-batch-" + theyCommit + "-")).isEqualTo(theyCommit ? 40 : 30);
    }
  }

  private static Callable<List<ClaimResult>> claimUntilDone(List<IdempotencyKey> keys, CountDownLatch start,
      List<Object> retries) {
    return () -> {
      start.countDown();
      start.await();
      while (true) {
        try {
          return store.inTransaction(tx -> store.claimAll(tx, keys, same("p", keys.size())));
        } catch (TransactionRetryException e) {
          retries.add(e.getMessage());
        }
      }
    };
  }

  // ------------------------------ the guard on IGNORE's warnings ------------------------------

  private static String table(String name, String extra) {
    return "CREATE TABLE " + name + " ("
        + " consumer_group varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
        + " idempotency_key varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
        + " key_source varchar(16) NOT NULL, payload_sha256 varbinary(32) NOT NULL,"
        + " processed_at datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), " + extra
        + " PRIMARY KEY (consumer_group, idempotency_key))";
  }

  private static MyBatisProcessedEventStore unverified(String table) {
    return MyBatisProcessedEventStore.builder(races.sessions).tableName(table).dialect(Dialect.MARIADB)
        .verifyTable(false).build();
  }

  private static void assertRefused(MyBatisProcessedEventStore on, List<IdempotencyKey> keys, String why,
      String table) throws Exception {
    long before = StoreTests.count(races.pool, "SELECT count(*) FROM " + table);
    assertThatThrownBy(() -> on.inTransaction(tx -> on.claimAll(tx, keys, same("p", keys.size()))))
        .isInstanceOf(PersistenceException.class)
        .hasMessageContaining("is refused, nothing is claimed")
        .hasMessageContaining(why);
    assertThat(StoreTests.count(races.pool, "SELECT count(*) FROM " + table)).as("rows in %s", table)
        .isEqualTo(before);
  }

  @Test
  void aColumnGivenAnImplicitValueByIgnoreIsRefused() throws Exception {
    // a column of the application's without a default: a plain INSERT fails (1364), the probe at
    // build refuses the table, and IGNORE would store '' in it with a warning
    StoreTests.execute(races.pool, table("no_default", "tenant varchar(16) NOT NULL,"));
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(races.sessions).tableName("no_default").build())
        .isInstanceOf(IllegalStateException.class);
    assertRefused(unverified("no_default"), keys("implicit", 3), "MariaDB error 1364", "no_default");
  }

  @Test
  void aRowSkippedByACheckIsRefusedEvenAmongDuplicates() throws Exception {
    // a CHECK of the application's that a key fails: IGNORE skips the row (warning 4025), which
    // would otherwise look like a duplicate
    StoreTests.execute(races.pool, table("checked", "CONSTRAINT no_refused CHECK (idempotency_key NOT LIKE 'refused%'),"));
    MyBatisProcessedEventStore checked = MyBatisProcessedEventStore.builder(races.sessions).tableName("checked").build();
    List<IdempotencyKey> stored = keys("stored", 2);
    checked.inTransaction(tx -> checked.claimAll(tx, stored, same("p", 2)));
    List<IdempotencyKey> batch = new ArrayList<>(stored);
    batch.addAll(keys("refused", 1));
    batch.addAll(keys("new", 2));
    assertRefused(checked, batch, "MariaDB error 4025", "checked");
    // alone in its statement, MariaDB keeps the CHECK's failure an error even under IGNORE
    assertThatThrownBy(() -> checked.inTransaction(tx -> checked.claimAll(tx, keys("refused", 1), same("p", 1))))
        .isInstanceOf(PersistenceException.class).hasMessageContaining("no_refused");
    // one claim per key: the plain INSERT fails with the CHECK's error itself
    assertThatThrownBy(() -> checked.inTransaction(tx -> checked.claim(tx, keys("refused", 1).get(0), sha256("p"))))
        .isInstanceOf(PersistenceException.class).hasMessageContaining("no_refused");
  }

  @Test
  void aKeyTruncatedByItsColumnIsRefused() throws Exception {
    // a key column shorter than the longest key: the start-up checks refuse it; unverified,
    // IGNORE would store the first 24 characters of a longer key
    StoreTests.execute(races.pool, "CREATE TABLE short_keys ("
        + " consumer_group varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
        + " idempotency_key varchar(24) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
        + " key_source varchar(16) NOT NULL, payload_sha256 varbinary(32) NOT NULL,"
        + " processed_at datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),"
        + " PRIMARY KEY (consumer_group, idempotency_key))");
    MyBatisProcessedEventStore shortKeys = unverified("short_keys");
    assertRefused(shortKeys, keys("truncated-far-beyond-twenty-four", 2), "which is none of the keys sent",
        "short_keys");
  }

  @Test
  void aRowSkippedByAnotherUniqueIndexIsRefused() throws Exception {
    // a unique index of the application's besides the key: a second key with the same payload is
    // skipped (1062 on that index), and the locking read does not find it under its own key
    StoreTests.execute(races.pool, table("unique_payload", "UNIQUE KEY one_payload (payload_sha256),"));
    MyBatisProcessedEventStore uniquePayload = unverified("unique_payload");
    assertRefused(uniquePayload, keys("same-payload", 2), "was neither inserted nor found", "unique_payload");
  }

  private static String namespace() {
    return "io.idem.store.jdbc.ProcessedEvents." + store.tableName();
  }
}
