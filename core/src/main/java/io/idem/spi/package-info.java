/**
 * The service-provider interface: what store and broker-adapter authors implement.
 *
 * <p>{@link io.idem.spi.ProcessedEventStore} is implemented once per database access layer
 * ({@code idem-store-jdbc} for MyBatis on PostgreSQL); {@link io.idem.spi.Acknowledgement} once
 * per broker adapter. Every implementation is expected to pass the matching compatibility kit in
 * {@code idem-testkit}. Application code does not call these types directly.
 */
@NullMarked
package io.idem.spi;

import org.jspecify.annotations.NullMarked;
