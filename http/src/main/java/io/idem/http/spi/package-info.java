/**
 * The service-provider interface of {@code idem-http}: where an Idempotency-Key endpoint keeps the
 * first response of each key ({@link io.idem.http.spi.StoredResponses}), implemented once per
 * database access layer ({@code io.idem.http.JdbcStoredResponses} for a MyBatis {@code SqlSession}
 * on PostgreSQL). Application code does not call it directly.
 */
@NullMarked
package io.idem.http.spi;

import org.jspecify.annotations.NullMarked;
