package io.idem.store.jdbc;

import java.time.Duration;
import java.time.Instant;

/**
 * The outbox table at one moment, and one relay's counts since it was built.
 *
 * @param backlog unsent rows that are not parked (due now or waiting for a backoff)
 * @param oldestUnsentAge age of the oldest unsent, unparked row on the database's clock ({@link
 *     Duration#ZERO} when there is none)
 * @param parked rows parked after their maximum attempts, or refused for good, waiting for an
 *     operator ({@link Outbox#unpark})
 * @param published rows this relay published and marked sent
 * @param failures failed publish attempts of this relay (parked ones included)
 * @param readAt when the table was read (the database's clock); {@link Instant#EPOCH} before the
 *     first read
 */
public record OutboxStats(
    long backlog, Duration oldestUnsentAge, long parked, long published, long failures,
    Instant readAt) {}
