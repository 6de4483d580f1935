/**
 * Test support for Idem users and implementers: compatibility kits that every store
 * ({@link io.idem.testkit.ProcessedEventStoreCompatibilityKit}) and broker adapter
 * ({@link io.idem.testkit.BrokerAdapterCompatibilityKit}) extends, an in-memory store for unit
 * tests, a crash injector for kill-the-JVM tests, the crash matrix ({@link
 * io.idem.testkit.CrashMatrix}: a consumer in a child JVM halted at each crash point, effects per
 * key) and an error injector for unexpected Throwables.
 */
@NullMarked
package io.idem.testkit;

import org.jspecify.annotations.NullMarked;
