package io.idem;

import java.util.List;

/**
 * The application's business logic for the new messages of one batch, so that their effects can
 * be written with one multi-row statement (one round trip) instead of one statement per message:
 *
 * <pre>{@code
 * .batchHandler((messages, session) -> session.getMapper(Payments.class).chargeAll(messages))
 * }</pre>
 *
 * <p>It runs inside the store's transaction, after the processed-events markers of the batch were
 * claimed, and gets only the messages whose key was new ({@link io.idem.spi.ClaimResult#CLAIMED}),
 * in the order they were received: duplicates, conflicts and messages without a valid key are
 * never in the list, which is never empty. Every write made through {@code context} commits or
 * rolls back together with all the batch's markers. The same rules as {@link MessageHandler}
 * apply otherwise (keep it short, no side effects outside the transaction, an outbox keyed by
 * {@link KeyedMessage#key()} for those).
 *
 * <p>When it throws, the whole batch rolls back and is redone message by message
 * ({@link IdempotentConsumer#processBatch}), this handler then being called with a one-element
 * list each time, so that only the message that really fails is retried or dead-lettered. {@link
 * IdempotentConsumer#process} also calls it with a one-element list. A handler may therefore see a
 * message again after an earlier call's writes were rolled back: it must not keep state outside
 * the transaction.
 *
 * <p>May be called from several threads at once (one per worker), never twice concurrently for
 * the same transaction.
 *
 * @param <C> the transaction context the store provides
 */
@FunctionalInterface
public interface BatchMessageHandler<C> {

  /**
   * Applies the business effects of {@code newMessages}.
   *
   * @param newMessages the new messages of the batch with their claimed keys, in receive order;
   *     unmodifiable, at least one element
   * @param context the store's transaction context
   * @throws Exception to roll back the batch and redo it message by message; a {@link
   *     NonRetryableException} thrown for a one-element list dead-letters that message at once
   */
  void handle(List<KeyedMessage> newMessages, C context) throws Exception;
}
