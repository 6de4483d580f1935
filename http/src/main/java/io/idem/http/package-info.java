/**
 * Idem for HTTP: the same guarantee as for brokers — the idempotency key claimed in the same
 * database transaction as the business write, the sender told only after that commit — for webhook
 * receivers ({@link io.idem.http.WebhookEndpoint}: the sender's event id, its signature verified
 * first) and for endpoints honouring the {@code Idempotency-Key} header ({@link
 * io.idem.http.IdempotencyKeyEndpoint}: the first response stored in the same transaction and
 * replayed). Both run the request through core's {@link io.idem.IdempotentConsumer}; docs/HTTP.md
 * has the rules.
 */
@NullMarked
package io.idem.http;

import org.jspecify.annotations.NullMarked;
