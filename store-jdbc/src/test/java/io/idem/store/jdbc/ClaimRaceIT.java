package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The claim racing an open transaction on the same key, at READ COMMITTED: the second claim waits
 * for the first; when the first commits, the claim statement's own read (its snapshot predates
 * the wait) finds nothing, and the store reads the fingerprint again — so a racing conflict is
 * reported as CONFLICT, never as DUPLICATE. Synchronised on pg_stat_activity, never on sleeps.
 */
class ClaimRaceIT {
  private static String storeApp;
  private static HikariDataSource observer;
  private static HikariDataSource storePool;
  private static SqlSessionFactory sessions;
  private static MyBatisProcessedEventStore store;
  private static ExecutorService threads;

  @BeforeAll
  static void setUp() {
    String schema = StoreTests.newSchema("claim_race");
    storeApp = "idem-claim-race-" + UUID.randomUUID().toString().substring(0, 8);
    observer = StoreTests.pool(schema, storeApp + "-observer", null, c -> {});
    storePool = StoreTests.pool(schema, storeApp, null, c -> {});
    sessions = MyBatisProcessedEventStoreIT.sessions(storePool);
    store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true)
        .claimLockTimeout(Duration.ZERO).build();
    threads = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void tearDown() {
    threads.shutdownNow();
    storePool.close();
    observer.close();
  }

  private static byte[] sha256(String payload) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(payload.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * The first transaction claims {@code key} with {@code firstPayload} and stays open; the second
   * claims it with {@code "second"} and waits; then the first commits or rolls back.
   *
   * @return what the second claim answered
   */
  private static ClaimResult race(String firstPayload, boolean firstCommits) throws Exception {
    IdempotencyKey key = new IdempotencyKey("race", "k-" + UUID.randomUUID(), KeySource.HEADER);
    try (SqlSession first = sessions.openSession(false)) {
      assertThat(store.claim(first, key, sha256(firstPayload))).isEqualTo(ClaimResult.CLAIMED);
      Future<ClaimResult> second =
          threads.submit(() -> store.<ClaimResult>inTransaction(tx -> store.claim(tx, key, sha256("second"))));
      StoreTests.awaitLockWait(observer, storeApp); // the second claim waits for the first
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
}
