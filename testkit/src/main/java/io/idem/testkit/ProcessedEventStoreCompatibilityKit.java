package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import io.idem.spi.NextClaim;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionRun;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
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
 *   protected ProcessedEventStore<SqlSession> unreachableStore() { ... a closed port ... }
 *   protected void recordEffect(SqlSession tx, String key) { ... insert through tx ... }
 *   protected int effectCount(String key) { ... }
 *   protected void failingStatement(SqlSession tx) { ... a statement the database rejects ... }
 * }
 * }</pre>
 *
 * <p>What it proves, each with a test that fails for a plausible wrong store (the kit's own
 * self-test, {@code StoreKitRejectsWrongStoresTest}, shows each one rejected): new / duplicate /
 * conflict answers decided from what was stored, a duplicate leaving the transaction usable (a
 * store that catches a unique violation fails it on PostgreSQL), keys of 512 characters stored
 * whole (a truncating store fails), {@link ProcessedEventStore#claimAll}'s shape and atomicity,
 * commit and rollback of marker and business write together, a racing claim that really waits for
 * the transaction holding its key — measured from the racing call, while the holder is provably
 * open — and then answers DUPLICATE, CONFLICT or (after a rollback) CLAIMED, {@link
 * ProcessedEventStore#confirmClaim}, {@link StoreUnavailableException} for an unreachable database
 * but the work's own failure rethrown unchanged, and purge in bounded batches.
 *
 * <p>Tests isolate themselves with a random consumer group, so {@link #store()} may return the
 * same store every time. Races are synchronized with latches; the only timed window is
 * {@link #claimWaitWindow()}.
 *
 * @param <C> the store's transaction context
 */
// the TransactionWork<Void> lambdas return null, which NullAway's standard (non-JSpecify) mode
// cannot express for a type parameter
@SuppressWarnings("NullAway")
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

    /** Another transaction holds key "held" (see {@link #race}); meanwhile a, held, c are claimed. */
    private List<ClaimResult> raceOnOneKey(String theirPayload, boolean theyCommit) throws Exception {
      Race<List<ClaimResult>> race = race(key("held"), theirPayload, theyCommit, tx -> store().claimAll(
          tx, List.of(key("a"), key("held"), key("c")), fingerprints(List.of("mine", "mine", "mine"))));
      race.assertWaited();
      return race.result();
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

  /** One transaction of a run: claims {@code k}, records its effect, announces {@code next}. */
  private void inRun(TransactionRun<C> run, String k, @Nullable String next) throws Exception {
    run.inTransaction(tx -> {
      assertThat(store().claim(tx, key(k), fingerprint("p"))).isEqualTo(ClaimResult.CLAIMED);
      recordEffect(tx, k);
      return null;
    }, key(k), fingerprint("p"), () -> next == null ? null : new NextClaim(key(next), fingerprint("p")));
  }

  @Nested
  @DisplayName("runs (ProcessedEventStore.openRun)")
  class Runs {

    @Test
    @DisplayName("each transaction of a run commits on its own when its call returns")
    void eachCommitsOnItsOwn() throws Exception {
      String a = "run-a-" + group;
      String b = "run-b-" + group;
      String c = "run-c-" + group;
      try (TransactionRun<C> run = store().openRun()) {
        inRun(run, a, b);
        assertThat(store().isProcessed(key(a))).isTrue();
        assertThat(effectCount(a)).isEqualTo(1);
        assertThat(store().isProcessed(key(b))).as("announced, not yet processed").isFalse();
        inRun(run, b, c);
        assertThat(store().isProcessed(key(b))).isTrue();
        inRun(run, c, null);
      }
      for (String k : List.of(a, b, c)) {
        assertThat(store().isProcessed(key(k))).as(k).isTrue();
        assertThat(effectCount(k)).as(k).isEqualTo(1);
      }
    }

    @Test
    @DisplayName("closing a run leaves the key it announced unclaimed, and nothing waits for it")
    void closeReleasesTheAnnouncedKey() throws Exception {
      String a = "run-close-a-" + group;
      String b = "run-close-b-" + group;
      TransactionRun<C> run = store().openRun();
      inRun(run, a, b);
      run.close();
      run.close();
      assertThat(store().isProcessed(key(b))).isFalse();
      assertThat(effectCount(b)).isZero();
      assertThat(claimCommitted(key(b), "p")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("a call for another key than the one announced claims its own key, and the announced one stays free")
    void anotherKeyThanAnnounced() throws Exception {
      String a = "run-other-a-" + group;
      String b = "run-other-b-" + group;
      String c = "run-other-c-" + group;
      try (TransactionRun<C> run = store().openRun()) {
        inRun(run, a, b);
        inRun(run, c, null);
      }
      assertThat(effectCount(c)).isEqualTo(1);
      assertThat(store().isProcessed(key(b))).isFalse();
      assertThat(claimCommitted(key(b), "p")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    @DisplayName("a failing transaction of a run rolls back its claim and effect, and is rethrown unchanged")
    void failureRollsBack() throws Exception {
      String a = "run-fail-a-" + group;
      String b = "run-fail-b-" + group;
      IllegalStateException boom = new IllegalStateException("boom");
      try (TransactionRun<C> run = store().openRun()) {
        inRun(run, a, b);
        assertThatThrownBy(() -> run.inTransaction(tx -> {
          store().claim(tx, key(b), fingerprint("p"));
          recordEffect(tx, b);
          throw boom;
        }, key(b), fingerprint("p"), () -> null)).isSameAs(boom);
      }
      assertThat(store().isProcessed(key(b))).isFalse();
      assertThat(effectCount(b)).isZero();
      assertThat(effectCount(a)).isEqualTo(1);
      assertThat(claimCommitted(key(b), "p")).isEqualTo(ClaimResult.CLAIMED);
    }
  }

  @Nested
  @DisplayName("concurrency")
  class Concurrency {

    @Test
    @DisplayName("regression: a racing claim waits for the open transaction, then is a duplicate")
    void racingClaimWaitsThenIsDuplicate() throws Exception {
      Race<ClaimResult> race = race(key("race"), "p", true, racer -> store().claim(racer, key("race"), fingerprint("p")));
      race.assertWaited();
      assertThat(race.result()).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(effectCount(race.holderEffect())).isEqualTo(1);
      assertThat(effectCount(race.racerEffect())).as("the racer's transaction is still usable").isEqualTo(1);
    }

    @Test
    @DisplayName("a racing claim with another payload waits for the open transaction, then is a conflict")
    void racingClaimWaitsThenIsConflict() throws Exception {
      Race<ClaimResult> race = race(key("race-c"), "p", true,
          racer -> store().claim(racer, key("race-c"), fingerprint("other")));
      race.assertWaited();
      assertThat(race.result()).isEqualTo(ClaimResult.CONFLICT);
      assertThat(effectCount(race.racerEffect())).as("the racer's transaction is still usable").isEqualTo(1);
    }

    @Test
    @DisplayName("a racing claim started while the first transaction is open gets the key when it rolls back")
    void racingClaimWinsAfterRollback() throws Exception {
      Race<ClaimResult> race = race(key("race-rb"), "p", false,
          racer -> store().claim(racer, key("race-rb"), fingerprint("p")));
      race.assertWaited();
      assertThat(race.result()).isEqualTo(ClaimResult.CLAIMED);
      assertThat(effectCount(race.holderEffect())).as("the rolled back write").isZero();
      assertThat(store().isProcessed(key("race-rb"))).isTrue();
    }

    @Test
    @DisplayName("many threads claiming the same keys: exactly one claim per key")
    void manyThreadsOneClaimEach() throws Exception {
      int workers = 8;
      int keys = 50;
      CountDownLatch go = new CountDownLatch(1);
      List<Future<List<ClaimResult>>> results = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        results.add(threads.submit(() -> {
          go.await();
          List<ClaimResult> answers = new ArrayList<>();
          for (int i = 0; i < keys; i++) {
            String k = "many-" + i;
            answers.add(store().inTransaction(tx -> {
              ClaimResult c = store().claim(tx, key(k), fingerprint("p"));
              if (c == ClaimResult.CLAIMED) {
                recordEffect(tx, k + "-" + group);
              }
              return c;
            }));
          }
          return answers;
        }));
      }
      go.countDown();
      List<ClaimResult> all = new ArrayList<>();
      for (Future<List<ClaimResult>> f : results) {
        all.addAll(f.get(60, TimeUnit.SECONDS));
      }
      assertThat(all).doesNotContain(ClaimResult.CONFLICT);
      assertThat(all).filteredOn(r -> r == ClaimResult.CLAIMED).hasSize(keys);
      for (int i = 0; i < keys; i++) {
        assertThat(effectCount("many-" + i + "-" + group)).isEqualTo(1);
      }
    }
  }

  // ---- races ------------------------------------------------------------------------------------

  /**
   * How long a racing claim is kept waiting behind an open transaction that holds its key, before
   * that transaction is allowed to end; default 500 ms. A claim that returns within this window,
   * while the other transaction is provably still open, did not wait. Must stay below the store's
   * own bound on that wait (store-jdbc: {@code claimLockTimeout}, 2 s by default), or the racer
   * gets a {@link TransactionRetryException} instead of its answer.
   */
  protected Duration claimWaitWindow() {
    return Duration.ofMillis(500);
  }

  /** How long the kit waits for a step of a race (a thread started, a claim returned); 30 s. */
  protected Duration raceTimeout() {
    return Duration.ofSeconds(30);
  }

  /** The racing side of {@link #race}: runs inside the racer's transaction. */
  @FunctionalInterface
  protected interface RacingClaim<C, T> {
    T claim(C transaction) throws Exception;
  }

  /**
   * What the racer of {@link #race} saw.
   *
   * @param result what the racing claim returned
   * @param waited from the racing claim's call to its return
   * @param returnedWhileHeld whether it returned while the holding transaction was still open
   * @param returnedInWindow whether it returned within {@link #claimWaitWindow()}
   * @param holderEffect the effect key written by the holder
   * @param racerEffect the effect key the racer writes after its claim (its transaction usable)
   */
  protected record Race<T>(
      T result,
      Duration waited,
      boolean returnedWhileHeld,
      boolean returnedInWindow,
      String holderEffect,
      String racerEffect,
      Duration window) {

    /** Asserts that the racing claim waited for the holding transaction to end. */
    public void assertWaited() {
      assertThat(returnedInWindow)
          .as("the racing claim returned within %s while the other transaction was open", window)
          .isFalse();
      assertThat(returnedWhileHeld)
          .as("the racing claim returned while the other transaction still held the key")
          .isFalse();
      assertThat(waited)
          .as("time from the racing claim's call to its answer")
          .isGreaterThanOrEqualTo(window);
    }
  }

  /**
   * Opens a transaction that claims {@code held} (with {@code holderPayload}) and writes an effect,
   * then keeps it open; once it provably holds the key, starts {@code racer} in a second
   * transaction, lets it run {@link #claimWaitWindow()} from the moment it called the store, and
   * only then lets the first transaction commit ({@code holderCommits}) or roll back. The racer
   * writes an effect after its claim, so that its transaction is shown usable.
   */
  protected final <T> Race<T> race(
      IdempotencyKey held, String holderPayload, boolean holderCommits, RacingClaim<C, T> racer)
      throws Exception {
    String holderEffect = "holder-" + held.value() + "-" + group;
    String racerEffect = "racer-" + held.value() + "-" + group;
    CountDownLatch claimed = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean holding = new AtomicBoolean(true);
    IllegalStateException rollback = new IllegalStateException("the holding transaction rolls back");
    Future<Object> holder = threads.submit(() -> {
      try {
        return store().inTransaction(tx -> {
          store().claim(tx, held, fingerprint(holderPayload));
          recordEffect(tx, holderEffect);
          claimed.countDown();
          if (!release.await(raceTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("never released");
          }
          holding.set(false); // from here on the transaction ends: commit or rollback
          if (!holderCommits) {
            throw rollback;
          }
          return "committed";
        });
      } catch (IllegalStateException e) {
        if (e != rollback) {
          throw e;
        }
        return "rolled back";
      }
    });
    try {
      assertThat(claimed.await(raceTimeout().toMillis(), TimeUnit.MILLISECONDS))
          .as("the first transaction claimed the key").isTrue();
      CountDownLatch calling = new CountDownLatch(1);
      CountDownLatch returned = new CountDownLatch(1);
      AtomicLong calledAt = new AtomicLong();
      AtomicLong returnedAt = new AtomicLong();
      AtomicBoolean heldAtReturn = new AtomicBoolean();
      Future<T> second = threads.submit(() -> store().inTransaction(tx -> {
        calledAt.set(System.nanoTime());
        calling.countDown();
        T r = racer.claim(tx);
        heldAtReturn.set(holding.get());
        returnedAt.set(System.nanoTime());
        returned.countDown();
        recordEffect(tx, racerEffect);
        return r;
      }));
      assertThat(calling.await(raceTimeout().toMillis(), TimeUnit.MILLISECONDS))
          .as("the racing transaction started").isTrue();
      // the first transaction is open (it waits for `release`) and the racer has called the store:
      // a claim that answers within the window did not wait for it
      boolean inWindow = returned.await(claimWaitWindow().toMillis(), TimeUnit.MILLISECONDS);
      release.countDown();
      assertThat(holder.get(raceTimeout().toMillis(), TimeUnit.MILLISECONDS))
          .isEqualTo(holderCommits ? "committed" : "rolled back");
      T result = second.get(raceTimeout().toMillis(), TimeUnit.MILLISECONDS);
      return new Race<>(result, Duration.ofNanos(returnedAt.get() - calledAt.get()), heldAtReturn.get(),
          inWindow, holderEffect, racerEffect, claimWaitWindow());
    } finally {
      release.countDown();
    }
  }

  // ---- keys, confirmClaim, failures -----------------------------------------------------------

  @Nested
  @DisplayName("keys")
  class Keys {

    @Test
    @DisplayName("a key of the maximum length is stored whole: keys differing in the last character are distinct")
    void longestKeyIsStoredWhole() throws Exception {
      String stem = "k".repeat(IdempotencyKey.MAX_LENGTH - 1);
      assertThat(claimCommitted(key(stem + "a"), "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key(stem + "b"), "p")).as("differs in character 512").isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key(stem), "p")).as("its 511-character prefix").isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key(stem + "a"), "p")).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(store().isProcessed(key(stem + "a"))).isTrue();
      assertThat(store().isProcessed(key(stem + "c"))).isFalse();
    }

    @Test
    @DisplayName("a key of 512 three-byte characters (1536 UTF-8 bytes) is stored whole")
    void longestMultiByteKeyIsStoredWhole() throws Exception {
      String stem = "日".repeat(IdempotencyKey.MAX_LENGTH - 1);
      assertThat(claimCommitted(key(stem + "本"), "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key(stem + "語"), "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(claimCommitted(key(stem + "本"), "p")).isEqualTo(ClaimResult.DUPLICATE);
    }
  }

  /**
   * A store of the same implementation as {@link #store()}, configured for a database that cannot
   * be reached (for a JDBC store: a closed port, a short connect timeout), with its table checks
   * off. Every call on it must throw {@link StoreUnavailableException}.
   */
  protected abstract ProcessedEventStore<C> unreachableStore() throws Exception;

  /**
   * Runs, in {@code transaction}, a business statement the database rejects (for a SQL store: a
   * unique violation, a missing table, a trigger's {@code RAISE}), and lets its exception out
   * unchanged. It is the work's own failure, not an outage: the kit checks that the store rethrows
   * it as it is, and that a store whose database aborts the transaction on such a failure (as
   * PostgreSQL does) never commits the claim without its effects when the work swallows it.
   */
  protected abstract void failingStatement(C transaction) throws Exception;

  @Nested
  @DisplayName("confirmClaim")
  class ConfirmClaim {

    @Test
    @DisplayName("a held claim is confirmed, and the commit keeps marker and write")
    void heldClaimIsConfirmed() throws Exception {
      String k = "confirm-" + group;
      store().inTransaction(tx -> {
        assertThat(store().claim(tx, key(k), fingerprint("p"))).isEqualTo(ClaimResult.CLAIMED);
        recordEffect(tx, k);
        store().confirmClaim(tx, key(k));
        return null;
      });
      assertThat(store().isProcessed(key(k))).isTrue();
      assertThat(effectCount(k)).isEqualTo(1);
    }

    @Test
    @DisplayName("a batch's held claims are confirmed at once, and the commit keeps markers and write")
    void heldClaimsAreConfirmedTogether() throws Exception {
      List<IdempotencyKey> keys = List.of(key("confirm-all-1"), key("confirm-all-2"), key("confirm-all-3"));
      store().inTransaction(tx -> {
        assertThat(store().claimAll(tx, keys, fingerprints(List.of("p", "p", "p"))))
            .containsOnly(ClaimResult.CLAIMED);
        recordEffect(tx, "confirm-all-" + group);
        store().confirmClaims(tx, keys);
        return null;
      });
      assertThat(keys).allMatch(k -> store().isProcessed(k));
      assertThat(effectCount("confirm-all-" + group)).isEqualTo(1);
    }

    @Test
    @DisplayName("a swallowed statement failure never yields a committed claim without its write")
    void swallowedFailureNeverCommitsTheClaimAlone() throws Exception {
      String k = "swallowed-" + group;
      AtomicBoolean swallowed = new AtomicBoolean();
      Throwable thrown = catchThrowable(() -> store().inTransaction(tx -> {
        store().claim(tx, key(k), fingerprint("p"));
        recordEffect(tx, k);
        try {
          failingStatement(tx);
        } catch (Exception e) {
          swallowed.set(true); // a handler that catches and goes on, as handlers do
        }
        store().confirmClaim(tx, key(k));
        return null;
      }));
      assertThat(swallowed).as("the statement failed").isTrue();
      if (thrown == null) {
        // the store reported a commit: then it really committed the claim with the write
        assertThat(store().isProcessed(key(k))).as("marker of a reported commit").isTrue();
        assertThat(effectCount(k)).as("write of a reported commit").isEqualTo(1);
      } else {
        assertThat(thrown).as("a failure of the work, not an outage")
            .isNotInstanceOf(StoreUnavailableException.class);
        assertThat(store().isProcessed(key(k))).as("marker after a reported failure").isFalse();
        assertThat(effectCount(k)).as("write after a reported failure").isZero();
        assertThat(claimCommitted(key(k), "p")).isEqualTo(ClaimResult.CLAIMED);
      }
    }
  }

  @Nested
  @DisplayName("failure classification")
  class Classification {

    @Test
    @DisplayName("an unreachable database: StoreUnavailableException from every call")
    void unreachableDatabaseIsStoreUnavailable() throws Exception {
      ProcessedEventStore<C> down = unreachableStore();
      assertThatThrownBy(() -> down.inTransaction(tx -> down.claim(tx, key("down"), fingerprint("p"))))
          .isInstanceOf(StoreUnavailableException.class);
      assertThatThrownBy(() -> down.isProcessed(key("down"))).isInstanceOf(StoreUnavailableException.class);
      assertThatThrownBy(() -> down.purge(Instant.now(), 10)).isInstanceOf(StoreUnavailableException.class);
      assertThat(store().isProcessed(key("down"))).isFalse();
    }

    @Test
    @DisplayName("a statement of the work that the database rejects: rethrown unchanged, not an outage")
    void rejectedStatementIsTheWorksFailure() throws Exception {
      String k = "rejected-" + group;
      AtomicReference<Exception> raised = new AtomicReference<>();
      Throwable thrown = catchThrowable(() -> store().inTransaction(tx -> {
        store().claim(tx, key(k), fingerprint("p"));
        recordEffect(tx, k);
        try {
          failingStatement(tx);
        } catch (Exception e) {
          raised.set(e);
          throw e;
        }
        return null;
      }));
      assertThat(raised.get()).as("the statement failed").isNotNull();
      assertThat(thrown).as("the work's own exception, unchanged").isSameAs(raised.get())
          .isNotInstanceOf(StoreUnavailableException.class)
          .isNotInstanceOf(TransactionRetryException.class);
      assertThat(store().isProcessed(key(k))).isFalse();
      assertThat(effectCount(k)).isZero();
      assertThat(claimCommitted(key(k), "p")).isEqualTo(ClaimResult.CLAIMED);
    }
  }

  @Nested
  @DisplayName("dead-letter decisions")
  class DeadLetterDecisions {

    private DeadLetterDecision decision(@Nullable String brokerMessageId) {
      return new DeadLetterDecision(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED,
          "handler failed on attempt 3 of 3: boom", "java.lang.IllegalStateException", brokerMessageId);
    }

    @Test
    @DisplayName("a recorded decision is read back whole, is no processed marker, and every claim of the key is a conflict")
    void recordedDecisionIsReadBack() throws Exception {
      DeadLetterDecision decided = decision("orders-0@41");
      assertThat(store().recordDeadLetter(key("dl"), decided)).isTrue();
      assertThat(store().deadLetterDecision(key("dl"))).isEqualTo(decided);
      assertThat(store().isProcessed(key("dl"))).as("a dead letter was never processed").isFalse();
      assertThat(claimCommitted(key("dl"), "p")).as("whatever the payload").isEqualTo(ClaimResult.CONFLICT);
      assertThat(claimCommitted(key("dl"), "other")).isEqualTo(ClaimResult.CONFLICT);
      List<ClaimResult> batch = store().inTransaction(tx -> store().claimAll(tx,
          List.of(key("dl"), key("dl-new")), List.of(fingerprint("p"), fingerprint("p"))));
      assertThat(batch).containsExactly(ClaimResult.CONFLICT, ClaimResult.CLAIMED);
      assertThat(store().deadLetterDecision(key("dl"))).as("after the claims").isEqualTo(decided);
      assertThat(store().deadLetterDecision(key("never"))).isNull();
    }

    @Test
    @DisplayName("a processed key's marker is never turned into a dead letter")
    void processedMarkerIsKept() throws Exception {
      assertThat(claimCommitted(key("done"), "p")).isEqualTo(ClaimResult.CLAIMED);
      assertThat(store().recordDeadLetter(key("done"), decision("q@1"))).isFalse();
      assertThat(store().deadLetterDecision(key("done"))).isNull();
      assertThat(store().isProcessed(key("done"))).isTrue();
    }

    @Test
    @DisplayName("a later decision replaces an earlier one; release removes only the decision of that delivery")
    void releaseRemovesOnlyThatDelivery() throws Exception {
      assertThat(store().recordDeadLetter(key("r"), decision("q@1"))).isTrue();
      assertThat(store().recordDeadLetter(key("r"), decision("q@2"))).isTrue();
      assertThat(store().deadLetterDecision(key("r"))).isEqualTo(decision("q@2"));
      assertThat(store().releaseDeadLetter(key("r"), "q@1")).as("another delivery's").isFalse();
      assertThat(store().deadLetterDecision(key("r"))).isEqualTo(decision("q@2"));
      assertThat(store().releaseDeadLetter(key("r"), "q@2")).isTrue();
      assertThat(store().deadLetterDecision(key("r"))).isNull();
      assertThat(claimCommitted(key("r"), "p")).as("a replay is claimed anew").isEqualTo(ClaimResult.CLAIMED);
      assertThat(store().releaseDeadLetter(key("r"), "q@2")).as("a processed marker").isFalse();
      assertThat(store().isProcessed(key("r"))).isTrue();

      assertThat(store().recordDeadLetter(key("no-id"), decision(null))).isTrue();
      assertThat(store().deadLetterDecision(key("no-id"))).isEqualTo(decision(null));
      assertThat(store().releaseDeadLetter(key("no-id"), null)).isTrue();
      assertThat(store().deadLetterDecision(key("no-id"))).isNull();
    }

    @Test
    @DisplayName("an unreachable database: StoreUnavailableException from recording and reading decisions")
    void unreachableDatabaseFailsDecisions() throws Exception {
      ProcessedEventStore<C> down = unreachableStore();
      assertThatThrownBy(() -> down.recordDeadLetter(key("down"), decision("q@1")))
          .isInstanceOf(StoreUnavailableException.class);
      assertThatThrownBy(() -> down.deadLetterDecision(key("down")))
          .isInstanceOf(StoreUnavailableException.class);
    }
  }

  @Nested
  @DisplayName("attempts")
  class Attempts {

    @Test
    @DisplayName("startAttempt counts 1, 2, 3 per key and consumer group, each count committed at once")
    void attemptsCountUp() throws Exception {
      assertThat(store().startAttempt(key("a"))).as("a store that keeps no counts answers 0;"
          + " a message that kills the process then loops").isEqualTo(1);
      assertThat(store().startAttempt(key("a"))).isEqualTo(2);
      assertThat(store().startAttempt(key("a"))).isEqualTo(3);
      assertThat(store().startAttempt(key("b"))).as("another key").isEqualTo(1);
      assertThat(store().startAttempt(new IdempotencyKey(group + "-other", "a", KeySource.HEADER)))
          .as("another consumer group").isEqualTo(1);
      // committed on its own: a transaction of the key that rolls back does not take it away
      assertThatThrownBy(() -> store().inTransaction(tx -> {
        store().claim(tx, key("a"), fingerprint("p"));
        throw new IllegalStateException("the handler failed");
      })).isInstanceOf(IllegalStateException.class);
      assertThat(store().startAttempt(key("a"))).isEqualTo(4);
    }

    @Test
    @DisplayName("clearAttempts removes the count with the transaction's commit, never with a rollback")
    void clearedOnlyByACommit() throws Exception {
      store().startAttempt(key("c"));
      store().startAttempt(key("c"));
      assertThatThrownBy(() -> store().inTransaction(tx -> {
        assertThat(store().claim(tx, key("c"), fingerprint("p"))).isEqualTo(ClaimResult.CLAIMED);
        store().clearAttempts(tx, key("c"));
        throw new IllegalStateException("the handler failed after the clear");
      })).isInstanceOf(IllegalStateException.class);
      assertThat(store().startAttempt(key("c"))).as("rolled back: the count stays").isEqualTo(3);
      store().inTransaction(tx -> {
        assertThat(store().claim(tx, key("c"), fingerprint("p"))).isEqualTo(ClaimResult.CLAIMED);
        recordEffect(tx, "c-" + group);
        store().clearAttempts(tx, key("c"));
        return null;
      });
      assertThat(effectCount("c-" + group)).isEqualTo(1);
      assertThat(store().startAttempt(key("c"))).as("committed: the count is gone").isEqualTo(1);
      store().inTransaction(tx -> {
        store().clearAttempts(tx, key("never-started"));
        return null;
      });
    }

    @Test
    @DisplayName("recording a dead-letter decision, and releasing it, start the key's count afresh")
    void deadLetterStartsAfresh() throws Exception {
      store().startAttempt(key("d"));
      store().startAttempt(key("d"));
      assertThat(store().recordDeadLetter(key("d"), new DeadLetterDecision(
          DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "died", null, "q@1"))).isTrue();
      assertThat(store().startAttempt(key("d"))).as("after the decision").isEqualTo(1);
      assertThat(store().startAttempt(key("d"))).isEqualTo(2);
      assertThat(store().releaseDeadLetter(key("d"), "q@1")).isTrue();
      assertThat(store().startAttempt(key("d"))).as("after the release (a replay)").isEqualTo(1);
    }

    @Test
    @DisplayName("purge removes counts last started before the cutoff, and keeps recent ones")
    void purgeRemovesOldCounts() throws Exception {
      store().startAttempt(key("p"));
      store().startAttempt(key("p"));
      store().purge(Instant.now().minus(Duration.ofHours(1)), 10);
      assertThat(store().startAttempt(key("p"))).as("recent: kept").isEqualTo(3);
      Instant future = Instant.now().plus(Duration.ofHours(1));
      int batches = 0;
      while (store().purge(future, 1000) == 1000 && ++batches < 1000) {
        // other tests' rows share the store
      }
      assertThat(store().startAttempt(key("p"))).as("old: purged").isEqualTo(1);
    }

    @Test
    @DisplayName("an unreachable database: StoreUnavailableException from startAttempt")
    void unreachableDatabaseFailsAttempts() throws Exception {
      ProcessedEventStore<C> down = unreachableStore();
      assertThatThrownBy(() -> down.startAttempt(key("down"))).isInstanceOf(StoreUnavailableException.class);
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
