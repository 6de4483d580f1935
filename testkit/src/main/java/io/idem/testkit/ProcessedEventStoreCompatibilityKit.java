package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.spi.ClaimResult;
import io.idem.spi.ProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The contract of {@link ProcessedEventStore}, for every implementation to extend:
 *
 * <pre>{@code
 * class MyBatisProcessedEventStoreIT extends ProcessedEventStoreCompatibilityKit<SqlSession> {
 *   protected ProcessedEventStore<SqlSession> store() { ... }
 *   protected void recordEffect(SqlSession tx, String key) { ... insert through tx ... }
 *   protected int effectCount(String key) { ... }
 * }
 * }</pre>
 *
 * <p>Tests isolate themselves with a random consumer group, so {@link #store()} may return the
 * same store every time.
 *
 * @param <C> the store's transaction context
 */
public abstract class ProcessedEventStoreCompatibilityKit<C> {

  /** The store under test. */
  protected abstract ProcessedEventStore<C> store();

  /** A business write of one effect row for {@code key}, inside {@code transaction}. */
  protected abstract void recordEffect(C transaction, String key) throws Exception;

  /** Committed effect rows for {@code key}, read outside any open test transaction. */
  protected abstract int effectCount(String key) throws Exception;

  private String group;
  private ExecutorService threads;

  @BeforeEach
  void setUpStoreKit() {
    group = "store-kit-" + UUID.randomUUID();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDownStoreKit() throws InterruptedException {
    threads.shutdownNow();
    threads.awaitTermination(10, TimeUnit.SECONDS);
  }

  /** A key of this test's consumer group. */
  protected final IdempotencyKey key(String value) {
    return new IdempotencyKey(group, value, KeySource.HEADER);
  }

  /** SHA-256 of {@code text}, the fingerprint the pipeline would compute for that payload. */
  protected static byte[] fingerprint(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private ClaimResult claimCommitted(IdempotencyKey key, String payload) throws Exception {
    return store().inTransaction(tx -> store().claim(tx, key, fingerprint(payload)));
  }

  @Nested
  @DisplayName("claim")
  class Claim {

    @Test
    @DisplayName("a new key is claimed, the same key again is a duplicate")
    void newThenDuplicate() throws Exception {
      assertThat(claimCommitted(key("a"), "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key("a"), "p")).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(store().isProcessed(key("a"))).isTrue();
    }

    @Test
    @DisplayName("the same key with a different payload fingerprint is a conflict")
    void differentFingerprintIsConflict() throws Exception {
      assertThat(claimCommitted(key("a"), "p1")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key("a"), "p2")).isEqualTo(ClaimResult.CONFLICT);
    }

    @Test
    @DisplayName("consumer groups do not share keys")
    void groupsAreIndependent() throws Exception {
      IdempotencyKey mine = key("shared");
      IdempotencyKey theirs = new IdempotencyKey(group + "-other", "shared", KeySource.HEADER);
      assertThat(claimCommitted(mine, "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(theirs, "p")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("keys of the maximum length and with SQL metacharacters are stored as they are")
    void awkwardKeysRoundTrip() throws Exception {
      String longest = "k".repeat(IdempotencyKey.MAX_LENGTH - 1) + "é";
      String sql = "'; DROP TABLE idem_processed_events; -- \" \\ % _ ${x} #{y}";
      for (String value : List.of(longest, sql, "ünïcødé ✓ 日本")) {
        assertThat(claimCommitted(key(value), "p")).as(value).isEqualTo(ClaimResult.CLAIMED);
        assertThat(claimCommitted(key(value), "p")).as(value).isEqualTo(ClaimResult.DUPLICATE);
      }
    }

    @Test
    @DisplayName("a duplicate claim leaves the transaction usable")
    void duplicateLeavesTransactionUsable() throws Exception {
      claimCommitted(key("a"), "p");
      ClaimResult result = store().inTransaction(tx -> {
        ClaimResult r = store().claim(tx, key("a"), fingerprint("p"));
        recordEffect(tx, "after-duplicate");
        return r;
      });
      assertThat(result).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(effectCount("after-duplicate")).isEqualTo(1);
    }
  }

  private List<ClaimResult> claimAllCommitted(List<IdempotencyKey> keys, List<String> payloads)
      throws Exception {
    return store().inTransaction(tx -> store().claimAll(tx, keys, fingerprints(payloads)));
  }

  private static List<byte[]> fingerprints(List<String> payloads) {
    return payloads.stream().map(ProcessedEventStoreCompatibilityKit::fingerprint).toList();
  }

  @Nested
  @DisplayName("claimAll")
  class ClaimAll {

    @Test
    @DisplayName("new, duplicate and conflicting keys in one call: answers parallel to the input")
    void mixedAnswersInOrder() throws Exception {
      claimCommitted(key("dup"), "p");
      claimCommitted(key("conflict"), "p");
      List<ClaimResult> results = claimAllCommitted(
          List.of(key("new-1"), key("dup"), key("conflict"), key("new-2")),
          List.of("p", "p", "other", "p"));
      assertThat(results).containsExactly(
          ClaimResult.CLAIMED, ClaimResult.DUPLICATE, ClaimResult.CONFLICT, ClaimResult.CLAIMED);
      assertThat(store().isProcessed(key("new-1"))).isTrue();
      assertThat(store().isProcessed(key("new-2"))).isTrue();
      assertThat(claimCommitted(key("conflict"), "p")).isEqualTo(ClaimResult.DUPLICATE);
    }

    @Test
    @DisplayName("a key twice in one call: the first occurrence decides, later ones are compared with it")
    void repeatedKeyFirstOccurrenceDecides() throws Exception {
      List<ClaimResult> results = claimAllCommitted(
          List.of(key("z"), key("twice"), key("a"), key("twice"), key("twice")),
          List.of("p", "first", "p", "first", "second"));
      assertThat(results).containsExactly(ClaimResult.CLAIMED, ClaimResult.CLAIMED, ClaimResult.CLAIMED,
          ClaimResult.DUPLICATE, ClaimResult.CONFLICT);
      assertThat(claimCommitted(key("twice"), "first")).isEqualTo(ClaimResult.DUPLICATE);
    }

    @Test
    @DisplayName("a committed key twice in one call: each occurrence compared with the stored marker")
    void repeatedCommittedKey() throws Exception {
      claimCommitted(key("stored"), "p");
      assertThat(claimAllCommitted(List.of(key("stored"), key("stored")), List.of("other", "p")))
          .containsExactly(ClaimResult.CONFLICT, ClaimResult.DUPLICATE);
    }

    @Test
    @DisplayName("a rollback drops every marker of the call and the business writes")
    void rollbackDropsAll() throws Exception {
      IllegalStateException boom = new IllegalStateException("boom");
      List<IdempotencyKey> keys = List.of(key("rb-1"), key("rb-2"), key("rb-3"));
      assertThatThrownBy(() -> store().inTransaction(tx -> {
        store().claimAll(tx, keys, fingerprints(List.of("p", "p", "p")));
        recordEffect(tx, "rb-" + group);
        throw boom;
      })).isSameAs(boom);
      assertThat(keys).noneMatch(k -> store().isProcessed(k));
      assertThat(effectCount("rb-" + group)).isZero();
      assertThat(claimAllCommitted(keys, List.of("p", "p", "p")))
          .containsOnly(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("an empty call answers an empty list; lists of different sizes are refused")
    void emptyAndMismatched() throws Exception {
      assertThat(claimAllCommitted(List.of(), List.of())).isEmpty();
      assertThatThrownBy(() -> store().inTransaction(
              tx -> store().claimAll(tx, List.of(key("m")), List.of())))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(store().isProcessed(key("m"))).isFalse();
    }

    @Test
    @DisplayName("one key held by an open transaction: the call waits, then that key is a conflict")
    void racingKeyWaitsThenConflicts() throws Exception {
      assertThat(raceOnOneKey("theirs", true))
          .containsExactly(ClaimResult.CLAIMED, ClaimResult.CONFLICT, ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("one key held by an open transaction that rolls back: the call claims it")
    void racingKeyClaimedAfterRollback() throws Exception {
      assertThat(raceOnOneKey("theirs", false)).containsOnly(ClaimResult.CLAIMED);
    }

    /** Another transaction claims key "held" and stays open 500 ms; meanwhile a, held, c are claimed. */
    private List<ClaimResult> raceOnOneKey(String theirPayload, boolean theyCommit) throws Exception {
      CountDownLatch held = new CountDownLatch(1);
      Future<Object> first = threads.submit(() -> {
        try {
          return store().inTransaction(tx -> {
            store().claim(tx, key("held"), fingerprint(theirPayload));
            held.countDown();
            Thread.sleep(500);
            if (!theyCommit) {
              throw new IllegalStateException("they fail");
            }
            return null;
          });
        } catch (IllegalStateException expected) {
          return expected;
        }
      });
      assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
      List<ClaimResult> results = threads.submit(() -> claimAllCommitted(
              List.of(key("a"), key("held"), key("c")), List.of("mine", "mine", "mine")))
          .get(20, TimeUnit.SECONDS);
      first.get(10, TimeUnit.SECONDS);
      return results;
    }
  }

  @Nested
  @DisplayName("transactions")
  class Transactions {

    @Test
    @DisplayName("a commit keeps marker and business write together")
    void commitKeepsBoth() throws Exception {
      String k = "commit-" + group;
      store().inTransaction(tx -> {
        store().claim(tx, key(k), fingerprint("p"));
        recordEffect(tx, k);
        return null;
      });
      assertThat(store().isProcessed(key(k))).isTrue();
      assertThat(effectCount(k)).isEqualTo(1);
    }

    @Test
    @DisplayName("an exception rolls back marker and business write, and is rethrown unchanged")
    void rollbackDropsBoth() throws Exception {
      String k = "rollback-" + group;
      IllegalStateException boom = new IllegalStateException("boom");
      assertThatThrownBy(() -> store().inTransaction(tx -> {
        store().claim(tx, key(k), fingerprint("p"));
        recordEffect(tx, k);
        throw boom;
      })).isSameAs(boom);
      assertThat(store().isProcessed(key(k))).isFalse();
      assertThat(effectCount(k)).isZero();
      assertThat(claimCommitted(key(k), "p")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("a checked exception is rethrown unchanged too")
    void checkedExceptionRethrown() {
      Exception checked = new java.io.IOException("checked");
      assertThatThrownBy(() -> store().inTransaction(tx -> {
        store().claim(tx, key("checked"), fingerprint("p"));
        throw checked;
      })).isSameAs(checked);
      assertThat(store().isProcessed(key("checked"))).isFalse();
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("regression: a racing claim waits for the open transaction, then is a duplicate")
    void racingClaimWaitsThenIsDuplicate() throws Exception {
      CountDownLatch firstClaimed = new CountDownLatch(1);
      Future<ClaimResult> first = threads.submit(() -> store().inTransaction(tx -> {
        ClaimResult r = store().claim(tx, key("race"), fingerprint("p"));
        recordEffect(tx, "race-" + group);
        firstClaimed.countDown();
        Thread.sleep(1000); // hold the transaction open, as a slow handler would
        return r;
      }));
      assertThat(firstClaimed.await(10, TimeUnit.SECONDS)).isTrue();
      long start = System.nanoTime();
      Future<ClaimResult> second = threads.submit(() -> store().inTransaction(tx -> {
        ClaimResult r = store().claim(tx, key("race"), fingerprint("p"));
        if (r == ClaimResult.CLAIMED) {
          recordEffect(tx, "race-" + group);
        }
        recordEffect(tx, "second-still-usable-" + group); // its transaction is not aborted
        return r;
      }));
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(ClaimResult.CLAIMED);
      assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThan(Duration.ofMillis(500));
      assertThat(effectCount("race-" + group)).isEqualTo(1);
      assertThat(effectCount("second-still-usable-" + group)).isEqualTo(1);
    }

    @Test
    @DisplayName("a racing claim gets the key when the first transaction rolls back")
    void racingClaimWinsAfterRollback() throws Exception {
      CountDownLatch firstClaimed = new CountDownLatch(1);
      Future<Object> first = threads.submit(() -> {
        try {
          return store().inTransaction(tx -> {
            store().claim(tx, key("race-rb"), fingerprint("p"));
            firstClaimed.countDown();
            Thread.sleep(500);
            throw new IllegalStateException("first fails");
          });
        } catch (IllegalStateException expected) {
          return expected;
        }
      });
      assertThat(firstClaimed.await(10, TimeUnit.SECONDS)).isTrue();
      Future<ClaimResult> second = threads.submit(() -> claimCommitted(key("race-rb"), "p"));
      assertThat(first.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalStateException.class);
      assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("many threads claiming the same keys: exactly one claim per key")
    void manyThreadsOneClaimEach() throws Exception {
      int workers = 8;
      int keys = 50;
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Integer>> results = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        results.add(threads.submit(() -> {
          go.await();
          int claimed = 0;
          for (int i = 0; i < keys; i++) {
            String k = "many-" + i;
            ClaimResult r = store().inTransaction(tx -> {
              ClaimResult c = store().claim(tx, key(k), fingerprint("p"));
              if (c == ClaimResult.CLAIMED) {
                recordEffect(tx, k + "-" + group);
              }
              return c;
            });
            assertThat(r).isNotEqualTo(ClaimResult.CONFLICT);
            claimed += r == ClaimResult.CLAIMED ? 1 : 0;
          }
          return claimed;
        }));
      }
      go.countDown();
      int total = 0;
      for (Future<Integer> f : results) {
        total += f.get(60, TimeUnit.SECONDS);
      }
      assertThat(total).isEqualTo(keys);
      for (int i = 0; i < keys; i++) {
        assertThat(effectCount("many-" + i + "-" + group)).isEqualTo(1);
      }
    }
  }

  @Nested
  @DisplayName("purge")
  class Purge {

    @Test
    @DisplayName("purge deletes old markers in bounded batches and keeps recent ones")
    void purgeInBatches() throws Exception {
      for (int i = 0; i < 25; i++) {
        claimCommitted(key("old-" + i), "p");
      }
      assertThat(store().purge(Instant.now().minus(Duration.ofHours(1)), 10)).isZero();
      assertThat(store().isProcessed(key("old-0"))).isTrue();

      Instant future = Instant.now().plus(Duration.ofHours(1));
      int deleted = 0;
      int batch;
      int batches = 0;
      do {
        batch = store().purge(future, 10);
        assertThat(batch).isLessThanOrEqualTo(10);
        deleted += batch;
        batches++;
      } while (batch == 10 && batches < 1000);
      assertThat(deleted).isGreaterThanOrEqualTo(25);
      assertThat(store().isProcessed(key("old-0"))).isFalse();
      assertThat(claimCommitted(key("old-0"), "p")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("purge refuses a batch size below 1")
    void purgeValidatesBatchSize() {
      assertThatThrownBy(() -> store().purge(Instant.now(), 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("maxRows");
    }
  }
}
