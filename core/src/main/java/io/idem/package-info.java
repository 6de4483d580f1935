/**
 * Idem's public API: make a message consumer idempotent by committing a dedup marker (the
 * processed-events row) in the same database transaction as the business write, and
 * acknowledging the broker only after that transaction committed.
 *
 * <p>Start with {@link io.idem.IdempotentConsumer#builder(io.idem.spi.ProcessedEventStore)}; a
 * broker adapter ({@code idem-kafka}, {@code idem-rabbitmq}, {@code idem-sqs}, {@code idem-jms})
 * feeds it {@link io.idem.InboundMessage}s and maps its {@link io.idem.ProcessingOutcome}s to the
 * broker's acknowledgement rules.
 */
@NullMarked
package io.idem;

import org.jspecify.annotations.NullMarked;
