package io.idem.spring;

import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.OutboxRelay;
import io.idem.store.jdbc.OutboxRelayHealth;
import io.idem.store.jdbc.OutboxStats;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The {@link OutboxRelay} of {@code idem.outbox.*} started and stopped with the application
 * context: {@link #start()} starts its thread, {@link #stop()} closes it (it finishes the batch in
 * flight, up to {@code idem.outbox.relay.close-timeout}) and then the publisher it created (an
 * application's {@code OutboxPublisher} bean is the application's to close), before the {@code
 * DataSource} closes. A relay cannot start again once closed, so a context started again (Spring's
 * test context pausing, a restart) gets a new relay, and a new publisher if Idem made it.
 * Thread-safe.
 */
public final class IdemOutboxRelay implements SmartLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(IdemOutboxRelay.class);

  private final java.util.function.Supplier<OutboxPublisher> publishers;
  private final java.util.function.Function<OutboxPublisher, OutboxRelay> relays;
  private final boolean ownsPublisher;
  private OutboxPublisher publisher;
  private volatile OutboxRelay relay;
  private boolean closed;
  private volatile boolean running;

  /**
   * @param publishers the publisher, asked again after each stop when {@code ownsPublisher}
   * @param ownsPublisher whether Idem made the publisher (and so closes it)
   */
  IdemOutboxRelay(java.util.function.Supplier<OutboxPublisher> publishers,
      java.util.function.Function<OutboxPublisher, OutboxRelay> relays, boolean ownsPublisher) {
    this.publishers = publishers;
    this.relays = relays;
    this.ownsPublisher = ownsPublisher;
    this.publisher = publishers.get();
    this.relay = relays.apply(publisher);
  }

  /** The relay (its stats, {@code relayOnce()}); a new one after each stop and start. */
  public OutboxRelay relay() {
    return relay;
  }

  @Override
  public synchronized void start() {
    if (!running) {
      if (closed) {
        if (ownsPublisher) {
          publisher = publishers.get();
        }
        relay = relays.apply(publisher);
        closed = false;
      }
      relay.start();
      running = true;
      LOG.info("outbox relay {} started on {} with {}", relay.name(), relay.tableName(),
          publisher.getClass().getSimpleName());
    }
  }

  @Override
  public synchronized void stop() {
    if (!running) {
      return;
    }
    running = false;
    relay.close();
    closed = true;
    if (!ownsPublisher) {
      return;
    }
    try {
      publisher.close();
    } catch (Exception e) {
      LOG.warn("outbox relay {}: its publisher did not close cleanly: {}", relay.name(), e.toString());
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /**
   * What the health indicator shows, from the relay's own {@link OutboxRelay#health()} snapshot
   * (no query): up while the relay thread runs (down before start, after stop, and if the thread
   * ended for any reason), with its state and its last stats.
   */
  Map<String, Object> healthView() {
    OutboxRelay relay = this.relay;
    OutboxRelayHealth health = relay.health();
    OutboxStats stats = health.stats();
    boolean up = isRunning() && health.running();
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("up", up);
    details.put("running", up);
    details.put("status", up ? health.status() : "DOWN");
    details.put("table", relay.tableName());
    details.put("backlog", stats.backlog());
    details.put("oldestUnsentAge", stats.oldestUnsentAge().toString());
    details.put("parked", stats.parked());
    details.put("published", stats.published());
    details.put("failures", stats.failures());
    details.put("statsReadAt", stats.readAt().toString());
    details.put("lastPublishAt", String.valueOf(health.lastPublishAt()));
    details.put("lastCycleAt", String.valueOf(health.lastCycleAt()));
    if (health.destinationUnavailableUntil() != null) {
      details.put("destinationUnavailableUntil", health.destinationUnavailableUntil().toString());
    }
    details.put("consecutiveDatabaseFailures", health.consecutiveDatabaseFailures());
    if (health.lastError() != null) {
      details.put("lastError", health.lastError());
    }
    return details;
  }
}
