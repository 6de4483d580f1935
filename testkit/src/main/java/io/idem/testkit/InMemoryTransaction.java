package io.idem.testkit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The transaction context of {@link InMemoryProcessedEventStore}: business writes register an
 * action with {@link #onCommit(Runnable)}, which runs only if the transaction commits. Confined to
 * the thread running the transaction.
 */
public final class InMemoryTransaction {
  private final List<Runnable> commitActions = new ArrayList<>();
  private final Map<Object, byte[]> fingerprints = new HashMap<>();
  /** Keys whose attempt counts go when this transaction commits. */
  final java.util.Set<Object> clearedAttempts = new java.util.HashSet<>();
  private boolean open = true;

  InMemoryTransaction() {}

  /** Runs {@code action} after this transaction commits; dropped on rollback. */
  public void onCommit(Runnable action) {
    checkOpen();
    commitActions.add(Objects.requireNonNull(action, "action"));
  }

  void remember(Object key, byte[] fingerprint) {
    fingerprints.put(key, fingerprint);
  }

  byte[] fingerprintOf(Object key) {
    byte[] fingerprint = fingerprints.get(key);
    if (fingerprint == null) {
      throw new IllegalStateException("no claim of " + key + " in this transaction");
    }
    return fingerprint;
  }

  void checkOpen() {
    if (!open) {
      throw new IllegalStateException("transaction already ended");
    }
  }

  void close() {
    open = false;
  }

  void runCommitActions() {
    commitActions.forEach(Runnable::run);
  }
}
