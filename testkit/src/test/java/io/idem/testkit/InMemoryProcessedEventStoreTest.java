package io.idem.testkit;

import java.sql.SQLException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** The in-memory store passes the same kit as the PostgreSQL one. */
class InMemoryProcessedEventStoreTest extends ProcessedEventStoreCompatibilityKit<InMemoryTransaction> {
  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

  @Override
  protected InMemoryProcessedEventStore store() {
    return store;
  }

  @Override
  protected void recordEffect(InMemoryTransaction transaction, String key) {
    transaction.onCommit(() -> effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet());
  }

  @Override
  protected InMemoryProcessedEventStore unreachableStore() {
    InMemoryProcessedEventStore down = new InMemoryProcessedEventStore();
    down.setAvailable(false);
    return down;
  }

  @Override
  protected void failingStatement(InMemoryTransaction transaction) throws SQLException {
    throw new SQLException("duplicate key value violates unique constraint", "23505");
  }

  @Override
  protected int effectCount(String key) {
    AtomicInteger count = effects.get(key);
    return count == null ? 0 : count.get();
  }
}
