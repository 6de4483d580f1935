/**
 * The main job: a ledger check of exactly-once effects on a real broker and PostgreSQL or
 * MariaDB while the consumer process is killed at random points. Its {@link io.idem.demo.DemoBroker} and
 * {@link io.idem.demo.LedgerRun} are also the machinery of the cross-broker integration suite.
 */
@NullMarked
package io.idem.demo;

import org.jspecify.annotations.NullMarked;
