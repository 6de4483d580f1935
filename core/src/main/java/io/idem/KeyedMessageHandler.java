package io.idem;

/**
 * The application's business logic for one message, given the idempotency key the store claimed
 * for it: the same contract as {@link MessageHandler}, plus the key.
 *
 * <p>Use it when the handler writes the key itself — typically a transactional-outbox row keyed by
 * the same idempotency key as the processed-events marker. The key is exactly the one claimed
 * (same {@link IdempotencyKey#consumerGroup() group}, {@link IdempotencyKey#value() value} and
 * {@link IdempotencyKey#source() source}), also when it came from CloudEvents headers or a JSON
 * Pointer, or was hashed under {@link OversizedKeyPolicy#HASH}:
 *
 * <pre>{@code
 * .handler((key, message, session) -> session.getMapper(Outbox.class).add(key.value(), message.payload()))
 * }</pre>
 *
 * @param <C> the transaction context the store provides
 */
@FunctionalInterface
public interface KeyedMessageHandler<C> {

  /**
   * Applies the message's business effect.
   *
   * @param key the idempotency key claimed for this message in this transaction
   * @param message the delivery
   * @param context the store's transaction context
   * @throws Exception to roll back and retry (or dead-letter past the retry policy's maximum
   *     attempts); throw {@link NonRetryableException} to dead-letter at once
   */
  void handle(IdempotencyKey key, InboundMessage message, C context) throws Exception;
}
