package io.idem.store.jdbc;

import io.idem.spi.ClaimResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link MyBatisProcessedEventStore#inTransaction} call learns about its transaction:
 * the PostgreSQL transaction id that made its claims (returned by the claim statement itself, so
 * no extra round trip) and the keys it claimed. With them the store checks, in the same round
 * trip as the COMMIT, that the transaction committing is still the one that claimed, and removes
 * a marker that the handler committed early by SQL text.
 *
 * <p>Confined to the thread running the transaction, like the session it belongs to; not
 * thread-safe.
 */
final class OpenTransaction {
  /** {@link #claimTxid()} when nothing was claimed. */
  static final long NO_CLAIM = -1;

  private long claimTxid = NO_CLAIM;
  private final List<Claimed> claimed = new ArrayList<>(1);

  /** One key this transaction inserted a marker for. */
  record Claimed(String consumerGroup, String key) {}

  /** Records that the transaction {@code txid} (PostgreSQL's 64-bit {@code txid_current()}) claimed a key. */
  void claimed(long txid, String consumerGroup, String key) {
    this.claimTxid = txid;
    claimed.add(new Claimed(consumerGroup, key));
  }

  /** The 64-bit transaction id that claimed, or {@link #NO_CLAIM}. */
  long claimTxid() {
    return claimTxid;
  }

  /** The keys claimed, in order; empty when nothing was claimed. */
  List<Claimed> claims() {
    return claimed;
  }

  /**
   * A claim already sent for this transaction, in the round trip of the previous transaction's
   * COMMIT ({@link MyBatisProcessedEventStore#openRun()}): the key, the fingerprint it was sent
   * with, and what the statement returned; {@code null} once taken (or when there was none).
   */
  private @Nullable String preGroup;
  private @Nullable String preKey;
  private byte @Nullable [] preFingerprint;
  private ClaimStatement.@Nullable Answer preAnswer;
  /** What the last {@link ClaimStatement#claim} of this transaction decided, if any. */
  private @Nullable ClaimResult answered;

  /** A transaction begun with the claim of {@code group}/{@code key} already answered. */
  static OpenTransaction preclaimed(String group, String key, byte[] fingerprint, ClaimStatement.Answer answer) {
    OpenTransaction transaction = new OpenTransaction();
    transaction.preGroup = group;
    transaction.preKey = key;
    transaction.preFingerprint = fingerprint;
    transaction.preAnswer = answer;
    transaction.carried = true;
    return transaction;
  }

  /** Whether this transaction was begun in the previous transaction's COMMIT round trip. */
  private boolean carried;

  /**
   * Whether this transaction was begun in the previous transaction's COMMIT round trip and kept
   * open between the two calls of the run: its session sat idle in a transaction outside the work.
   */
  boolean carried() {
    return carried;
  }

  /** Whether this transaction was begun for the claim of exactly this key and fingerprint. */
  boolean preclaimedFor(String group, String key, byte[] fingerprint) {
    return preAnswer != null && group.equals(preGroup) && key.equals(preKey)
        && Arrays.equals(fingerprint, preFingerprint);
  }

  /**
   * The claim already answered for this key and fingerprint, taken once; {@code null} when there
   * is none for it (the claim statement must then run).
   */
  ClaimStatement.@Nullable Answer takePreclaimed(String group, String key, byte[] fingerprint) {
    if (!preclaimedFor(group, key, fingerprint)) {
      return null;
    }
    ClaimStatement.Answer answer = preAnswer;
    preAnswer = null;
    return answer;
  }

  /** Whether a claim sent ahead for this transaction was never taken by its work. */
  boolean preclaimUntaken() {
    return preAnswer != null;
  }

  /** Statements to run before the COMMIT, in its round trip ({@link MyBatisProcessedEventStore#executeBeforeCommit}). */
  private final List<BeforeCommit> beforeCommit = new ArrayList<>(0);
  /** Whether the claim set {@code lock_timeout} back to its value before the claim. */
  private boolean lockTimeoutRestored;

  /** A statement sent in the COMMIT's round trip, before the commit check, with its parameters. */
  record BeforeCommit(String sql, List<@Nullable Object> parameters) {}

  void beforeCommit(BeforeCommit statement) {
    beforeCommit.add(statement);
  }

  /** The statements queued for the COMMIT's round trip, in order; empty when none. */
  List<BeforeCommit> statementsBeforeCommit() {
    return beforeCommit;
  }

  void lockTimeoutRestored() {
    this.lockTimeoutRestored = true;
  }

  /**
   * Whether this transaction's claim bounded its own lock wait only ({@link
   * MyBatisProcessedEventStore.Builder#restoreLockTimeoutAfterClaim}): the statements after it
   * run under the {@code lock_timeout} the transaction had before.
   */
  boolean isLockTimeoutRestored() {
    return lockTimeoutRestored;
  }

  /** Keys whose claims are to be checked with the COMMIT (MariaDB), in order, without repeats. */
  private @Nullable LinkedHashSet<MariaDbClaimCheck.Key> toConfirm;

  /**
   * Records that the claim of {@code group}/{@code key} is to be confirmed with the COMMIT
   * ({@link MyBatisProcessedEventStore#confirmClaim} on MariaDB): its marker is counted in the
   * COMMIT's round trip ({@link MariaDbClaimCheck#checkAndCommit}).
   */
  void confirmAtCommit(String group, String key) {
    if (toConfirm == null) {
      toConfirm = new LinkedHashSet<>();
    }
    toConfirm.add(new MariaDbClaimCheck.Key(group, key));
  }

  /** The keys {@link #confirmAtCommit} recorded, in order; empty when none. */
  List<MariaDbClaimCheck.Key> confirmedAtCommit() {
    return toConfirm == null ? List.of() : new ArrayList<>(toConfirm);
  }

  /** Whether {@link #confirmAtCommit} recorded any key. */
  boolean confirmsAtCommit() {
    return toConfirm != null;
  }

  void answered(ClaimResult result) {
    this.answered = result;
  }

  /** What the last claim of this transaction decided; {@code null} when it claimed nothing. */
  @Nullable ClaimResult answered() {
    return answered;
  }
}
