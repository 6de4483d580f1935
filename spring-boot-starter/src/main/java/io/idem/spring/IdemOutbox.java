package io.idem.spring;

import io.idem.IdempotencyKey;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import java.util.Map;
import java.util.Objects;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The transactional outbox for Spring code: {@link #enqueue} writes a row on the connection of the
 * Spring transaction open on the thread — inside an {@link Idempotent} method, Idem's own — so it
 * commits exactly when the method's other writes and the processed-events marker commit, and the
 * relay ({@code idem.outbox.*}) publishes it afterwards (docs/OUTBOX.md). Thread-safe.
 *
 * <pre>{@code
 * @KafkaListener(topics = "orders") @Idempotent(consumerGroup = "billing")
 * public void onOrder(@Payload Order order) {
 *   jdbc.update("INSERT INTO charges …");
 *   outbox.enqueue("receipts", receiptOf(order));   // keyed by the order's idempotency key
 * }
 * }</pre>
 */
public final class IdemOutbox {
  private final Outbox outbox;
  private final SqlSessionFactory sessions;

  IdemOutbox(Outbox outbox, SqlSessionFactory sessions) {
    this.outbox = Objects.requireNonNull(outbox, "outbox");
    this.sessions = Objects.requireNonNull(sessions, "sessions");
  }

  /** The store-jdbc outbox (its table). */
  public Outbox outbox() {
    return outbox;
  }

  /**
   * Writes a row keyed by the idempotency key of the message being handled on this thread.
   *
   * @return {@code true} when written; {@code false} when a row for this destination and key is
   *     already there (enqueueing is idempotent)
   * @throws IllegalStateException outside an {@code @Idempotent} method (or in a batch listener,
   *     whose call has several keys: use {@link #enqueue(OutboxEntry)})
   */
  public boolean enqueue(String destination, byte[] payload) {
    return enqueue(destination, payload, Map.of());
  }

  /** As {@link #enqueue(String, byte[])}, with headers for the published message. */
  public boolean enqueue(String destination, byte[] payload, Map<String, String> headers) {
    IdempotencyKey key = IdemPipelines.currentKey();
    if (key == null) {
      throw new IllegalStateException("IdemOutbox.enqueue(destination, payload) takes the key of the"
          + " message an @Idempotent method is handling, but none is on this thread; use"
          + " enqueue(OutboxEntry) with a key of your own");
    }
    return enqueue(new OutboxEntry(key.value(), destination, null, payload, headers));
  }

  /**
   * Writes {@code entry} in the Spring transaction open on this thread.
   *
   * @throws IllegalStateException when no Spring transaction is open (the row would commit on its
   *     own, before or without the work it stands for)
   * @throws IllegalArgumentException when the entry breaks a rule of {@link OutboxEntry}
   */
  public boolean enqueue(OutboxEntry entry) {
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException("IdemOutbox.enqueue needs the transaction of the work the row"
          + " stands for (an @Idempotent method's, a @Transactional method's): none is open on this thread");
    }
    try (SqlSession session = sessions.openSession(ExecutorType.SIMPLE, false)) {
      return outbox.enqueue(session, entry);
    }
  }
}
