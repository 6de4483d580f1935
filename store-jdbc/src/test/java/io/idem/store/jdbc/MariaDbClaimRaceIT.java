package io.idem.store.jdbc;

import static io.idem.store.jdbc.MariaDbRaces.sha256;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Concurrent duplicates on MariaDB, at InnoDB's default REPEATABLE READ: a claim racing an open
 * transaction on the same key waits for it (the duplicate-key check takes a lock on the row), then
 * gets the duplicate-key error and reads the committed fingerprint with a locking read (CONFLICT or
 * DUPLICATE, never mixed up), or inserts when the first rolled back. What InnoDB adds to
 * PostgreSQL's rules: two claims waiting on one key whose holder rolls back deadlock (both hold
 * the shared lock of the failed duplicate check and want the exclusive one), and that — error
 * 1213 — and a wait past the claim lock timeout — error 1205 — are transaction retries.
 * Synchronised on information_schema.INNODB_TRX (a transaction in LOCK WAIT whose statement names
 * the race's key), never on sleeps.
 */
class MariaDbClaimRaceIT {
  private static MariaDbRaces races;

  @BeforeAll
  static void setUp() {
    races = new MariaDbRaces("claim_race");
  }

  @AfterAll
  static void tearDown() {
    races.close();
  }

  private static IdempotencyKey newKey() {
    return new IdempotencyKey("race", "k-" + UUID.randomUUID(), KeySource.HEADER);
  }

  /** Waits until {@code waiters} transactions wait for a lock in a statement naming {@code key}. */
  private static void awaitLockWaits(IdempotencyKey key, int waiters) {
    races.awaitLockWaits(key.value(), waiters);
  }

  /**
   * The first transaction claims {@code key} with {@code firstPayload} and stays open; the second
   * claims it with {@code "second"} and waits; then the first commits or rolls back.
   */
  private static ClaimResult race(String firstPayload, boolean firstCommits) throws Exception {
    IdempotencyKey key = newKey();
    try (SqlSession first = races.sessions.openSession(false)) {
      assertThat(races.store.claim(first, key, sha256(firstPayload))).isEqualTo(ClaimResult.CLAIMED);
      Future<ClaimResult> second =
          races.threads.submit(() -> races.store.<ClaimResult>inTransaction(tx -> races.store.claim(tx, key, sha256("second"))));
      awaitLockWaits(key, 1);
      if (firstCommits) {
        first.commit(true);
      } else {
        first.rollback(true);
      }
      return second.get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aRacingClaimWithAnotherPayloadIsAConflictOnceTheFirstCommits() throws Exception {
    assertThat(race("first", true)).isEqualTo(ClaimResult.CONFLICT);
  }

  @Test
  void aRacingClaimWithTheSamePayloadIsADuplicateOnceTheFirstCommits() throws Exception {
    assertThat(race("second", true)).isEqualTo(ClaimResult.DUPLICATE);
  }

  @Test
  void aRacingClaimGetsTheKeyWhenTheFirstRollsBack() throws Exception {
    assertThat(race("first", false)).isEqualTo(ClaimResult.CLAIMED);
  }

  @Test
  void aRacingClaimThatHadReadBeforeStillSeesTheCommittedRow() throws Exception {
    // REPEATABLE READ: the racer's snapshot is taken by its first read, before the first commits;
    // the fingerprint is read with a locking read, which sees the committed row anyway
    IdempotencyKey key = newKey();
    try (SqlSession first = races.sessions.openSession(false)) {
      races.store.claim(first, key, sha256("first"));
      Future<ClaimResult> second = races.threads.submit(() -> races.store.<ClaimResult>inTransaction(tx -> {
        tx.selectList(namespace() + ".exists", java.util.Map.of("consumerGroup", "race", "key", "snapshot"));
        return races.store.claim(tx, key, sha256("second"));
      }));
      awaitLockWaits(key, 1);
      first.commit(true);
      assertThat(second.get(30, TimeUnit.SECONDS)).isEqualTo(ClaimResult.CONFLICT);
    }
  }

  @Test
  void twoClaimsWaitingOnAKeyWhoseHolderRollsBackOneClaimsTheOtherIsRetriedOrSeesIt() throws Exception {
    IdempotencyKey key = newKey();
    List<Future<ClaimResult>> racers = new ArrayList<>();
    try (SqlSession first = races.sessions.openSession(false)) {
      races.store.claim(first, key, sha256("first"));
      for (int i = 0; i < 2; i++) {
        racers.add(races.threads.submit(() -> races.store.<ClaimResult>inTransaction(tx -> races.store.claim(tx, key, sha256("p")))));
      }
      awaitLockWaits(key, 2);
      first.rollback(true);
    }
    List<Object> answers = new ArrayList<>();
    for (Future<ClaimResult> racer : racers) {
      try {
        answers.add(racer.get(30, TimeUnit.SECONDS));
      } catch (ExecutionException e) {
        assertThat(e.getCause()).isInstanceOf(TransactionRetryException.class)
            .hasMessageContaining("1213");
        answers.add("retry");
      }
    }
    // InnoDB: both hold the shared lock of the failed duplicate check and want the exclusive one;
    // the deadlock it detects rolls one back (1213, retried: its retry finds the key claimed).
    // Without the deadlock, the later one waits for the winner and sees its row.
    assertThat(answers).containsOnlyOnce(ClaimResult.CLAIMED);
    assertThat(answers).hasSize(2).allMatch(a -> a == ClaimResult.CLAIMED || a.equals("retry")
        || a == ClaimResult.DUPLICATE);
  }

  @Test
  void aDeadlockBetweenTwoClaimsIsATransactionRetry() throws Exception {
    IdempotencyKey a = newKey();
    IdempotencyKey b = newKey();
    try (SqlSession first = races.sessions.openSession(false)) {
      races.store.claim(first, a, sha256("p"));
      Future<ClaimResult> second = races.threads.submit(() -> races.store.<ClaimResult>inTransaction(tx -> {
        races.store.claim(tx, b, sha256("p"));
        return races.store.claim(tx, a, sha256("p")); // waits for the first
      }));
      awaitLockWaits(a, 1);
      Throwable firstFailure = null;
      try {
        races.store.claim(first, b, sha256("p")); // waits for the second: a cycle, one is rolled back
      } catch (TransactionRetryException e) {
        firstFailure = e;
      }
      Throwable secondFailure = null;
      try {
        second.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        secondFailure = e.getCause();
      }
      assertThat(firstFailure == null ^ secondFailure == null)
          .as("exactly one of the two is the deadlock's victim: %s / %s", firstFailure, secondFailure)
          .isTrue();
      Throwable victim = firstFailure != null ? firstFailure : secondFailure;
      assertThat(victim).isInstanceOf(TransactionRetryException.class).hasMessageContaining("1213");
      first.rollback(true);
    }
  }

  @Test
  void aClaimWaitingPastTheClaimLockTimeoutIsATransactionRetry() throws Exception {
    MyBatisProcessedEventStore impatient = MyBatisProcessedEventStore.builder(races.sessions)
        .claimLockTimeout(Duration.ofSeconds(1)).build();
    IdempotencyKey key = newKey();
    try (SqlSession first = races.sessions.openSession(false)) {
      races.store.claim(first, key, sha256("first"));
      assertThatThrownBy(() -> impatient.inTransaction(tx -> impatient.claim(tx, key, sha256("second"))))
          .isInstanceOf(TransactionRetryException.class)
          .hasMessageContaining("innodb_lock_wait_timeout 1 s")
          .hasMessageContaining("1205");
      first.rollback(true);
    }
    // the wait was that statement's: the session's own innodb_lock_wait_timeout is untouched
    try (SqlSession session = races.sessions.openSession(true)) {
      try (ResultSet rs = session.getConnection().createStatement()
          .executeQuery("SELECT @@SESSION.innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout")) {
        rs.next();
        assertThat(rs.getBoolean(1)).isTrue();
      }
    }
  }

  private static String namespace() {
    return "io.idem.store.jdbc.ProcessedEvents." + races.store.tableName();
  }
}
