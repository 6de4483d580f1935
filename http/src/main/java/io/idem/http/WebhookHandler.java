package io.idem.http;

/**
 * The business logic of a webhook receiver, run once per event id in the transaction that claimed
 * it: write the event's effect through {@code transaction}. Returning commits (the sender is then
 * answered 2xx); throwing rolls back (answered 5xx, so the sender redelivers and the handler runs
 * again).
 *
 * @param <C> the store's transaction context ({@code SqlSession} for store-jdbc)
 */
@FunctionalInterface
public interface WebhookHandler<C> {
  void handle(WebhookEvent event, C transaction) throws Exception;
}
