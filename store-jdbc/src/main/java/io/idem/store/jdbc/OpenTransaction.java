package io.idem.store.jdbc;

import java.util.ArrayList;
import java.util.List;

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
}
