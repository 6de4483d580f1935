/**
 * The service-provider interface: what store and broker-adapter authors implement.
 *
 * <p>{@link io.idem.spi.ProcessedEventStore} is implemented once per database access layer
 * ({@code idem-store-jdbc} for MyBatis on PostgreSQL); {@link io.idem.spi.Acknowledgement} once
 * per broker adapter. Every implementation is expected to pass the matching compatibility kit in
 * {@code idem-testkit}. Application code does not call these types directly.
 *
 * <p>Shared pieces for adapter authors, so that an adapter writes only what its broker decides
 * (docs/ADAPTERS.md): {@link io.idem.spi.AdapterWorker} (surviving what processing throws, the
 * stop after a release, {@code close()}'s bounded wait and interrupt), {@link
 * io.idem.spi.SettlementRecord} (what the acknowledgement left for the worker), {@link
 * io.idem.spi.Settings} (configuration checks naming the setting), {@link
 * io.idem.spi.DecodedHeaders} and {@link io.idem.spi.Utf8} (headers as strict UTF-8).
 */
@NullMarked
package io.idem.spi;

import org.jspecify.annotations.NullMarked;
