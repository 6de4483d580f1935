package io.idem;

/**
 * The application's business logic for one message.
 *
 * <p>It runs inside the store's transaction, after the processed-events marker was claimed: every
 * write made through {@code context} (for {@code idem-store-jdbc}, the MyBatis {@code SqlSession})
 * commits or rolls back together with the marker. Work that leaves the database (e-mails, HTTP
 * calls, publishing to another broker) cannot roll back: record it in a transactional outbox in
 * the same transaction instead, keyed by the same idempotency key. A handler that needs that key
 * (it may come from CloudEvents headers or a JSON Pointer, or be hashed) is a
 * {@link KeyedMessageHandler}:
 *
 * <pre>{@code
 * .handler((message, session) -> session.getMapper(Payments.class).charge(message.payload()))
 * .handler((key, message, session) -> session.getMapper(Outbox.class).add(key.value(), message.payload()))
 * }</pre>
 *
 * <p>Keep it short: the open transaction is the in-progress lease, and a second delivery of the
 * same key waits on it. A handler may be called from several threads at once (one per worker)
 * but never twice concurrently for the same transaction.
 *
 * @param <C> the transaction context the store provides
 */
@FunctionalInterface
public interface MessageHandler<C> {

  /**
   * Applies the message's business effect.
   *
   * @throws Exception to roll back and retry (or dead-letter past the retry policy's maximum
   *     attempts); throw {@link NonRetryableException} to dead-letter at once
   */
  void handle(InboundMessage message, C context) throws Exception;
}
