package io.idem.store.jdbc;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Objects;

/**
 * Publishes an {@link OutboxRelay}'s counts to Micrometer. Needs {@code
 * io.micrometer:micrometer-core} on the classpath (an optional dependency of {@code
 * idem-store-jdbc}). The gauges read {@link OutboxRelay#lastStats()} (refreshed by the relay
 * thread every {@code statsInterval}): a scrape never queries the database.
 *
 * <p>Meters, all tagged {@code outbox.table} and {@code relay}:
 *
 * <ul>
 *   <li>{@code idem.outbox.backlog} (gauge, rows): unsent rows that are not parked;
 *   <li>{@code idem.outbox.oldest.unsent.age} (gauge, seconds): age of the oldest of them;
 *   <li>{@code idem.outbox.parked} (gauge, rows): parked rows waiting for an operator;
 *   <li>{@code idem.outbox.published} (counter): rows this relay published and marked sent;
 *   <li>{@code idem.outbox.failures} (counter): failed publish attempts of this relay (charged
 *       to rows; a destination outage is not one);
 *   <li>{@code idem.outbox.relay.running} (gauge, 1 or 0): {@link OutboxRelay#isRunning()};
 *   <li>{@code idem.outbox.destination.unavailable} (gauge, 1 or 0): the relay is backing off a
 *       destination outage;
 *   <li>{@code idem.outbox.last.publish.age} (gauge, seconds): time since this relay last marked a
 *       row sent, {@code NaN} before its first;
 *   <li>{@code idem.outbox.claims} (counter): claims this relay made, empty ones included (keeps
 *       moving while the relay runs and reaches the database).
 * </ul>
 */
public final class MicrometerOutboxMetrics {
  private MicrometerOutboxMetrics() {}

  /** Registers the meters of {@code relay} in {@code registry}. */
  public static void bind(MeterRegistry registry, OutboxRelay relay) {
    Objects.requireNonNull(registry, "registry");
    Objects.requireNonNull(relay, "relay");
    String table = relay.tableName();
    String name = relay.name();
    Gauge.builder("idem.outbox.backlog", relay, r -> r.lastStats().backlog())
        .description("Unsent outbox rows that are not parked").baseUnit("rows")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    Gauge.builder("idem.outbox.oldest.unsent.age", relay,
            r -> r.lastStats().oldestUnsentAge().toMillis() / 1e3)
        .description("Age of the oldest unsent, unparked outbox row").baseUnit("seconds")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    Gauge.builder("idem.outbox.parked", relay, r -> r.lastStats().parked())
        .description("Outbox rows parked after their maximum attempts").baseUnit("rows")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    FunctionCounter.builder("idem.outbox.published", relay, r -> r.lastStats().published())
        .description("Outbox rows this relay published and marked sent")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    FunctionCounter.builder("idem.outbox.failures", relay, r -> r.lastStats().failures())
        .description("Failed publish attempts of this relay")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    Gauge.builder("idem.outbox.relay.running", relay, r -> r.isRunning() ? 1 : 0)
        .description("1 while the outbox relay thread runs, 0 otherwise")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    Gauge.builder("idem.outbox.destination.unavailable", relay,
            r -> r.health().destinationUnavailableUntil() != null ? 1 : 0)
        .description("1 while the relay backs off a destination outage")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    Gauge.builder("idem.outbox.last.publish.age", relay, r -> {
          java.time.Instant last = r.health().lastPublishAt();
          return last == null ? Double.NaN
              : java.time.Duration.between(last, java.time.Instant.now()).toMillis() / 1e3;
        })
        .description("Time since this relay last marked a row sent").baseUnit("seconds")
        .tag("outbox.table", table).tag("relay", name).register(registry);
    FunctionCounter.builder("idem.outbox.claims", relay, OutboxRelay::claimCount)
        .description("Claims this relay made, empty ones included")
        .tag("outbox.table", table).tag("relay", name).register(registry);
  }
}
