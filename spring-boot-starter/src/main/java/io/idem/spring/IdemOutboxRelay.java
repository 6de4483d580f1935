package io.idem.spring;

import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.OutboxRelay;
import io.idem.store.jdbc.OutboxStats;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The {@link OutboxRelay} of {@code idem.outbox.*} started and stopped with the application
 * context: {@link #start()} starts its thread, {@link #stop()} closes it (it finishes the batch in
 * flight, up to {@code idem.outbox.relay.close-timeout}) and then the publisher, before the
 * {@code DataSource} closes. Thread-safe.
 */
public final class IdemOutboxRelay implements SmartLifecycle {
  private static final Logger LOG = LoggerFactory.getLogger(IdemOutboxRelay.class);

  private final OutboxRelay relay;
  private final OutboxPublisher publisher;
  private volatile boolean running;

  IdemOutboxRelay(OutboxRelay relay, OutboxPublisher publisher) {
    this.relay = relay;
    this.publisher = publisher;
  }

  /** The relay (its stats, {@code relayOnce()}). */
  public OutboxRelay relay() {
    return relay;
  }

  @Override
  public synchronized void start() {
    if (!running) {
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
   * What the health indicator shows, from snapshots only (no query): up while the relay runs, with
   * its last stats. <strong>The one place to switch to the relay's own health view</strong> once
   * {@code OutboxRelay} has one: until then "running" is this lifecycle's {@link #isRunning()}.
   */
  Map<String, Object> healthView() {
    OutboxStats stats = relay.lastStats();
    Map<String, Object> details = new LinkedHashMap<>();
    details.put("up", isRunning());
    details.put("running", isRunning());
    details.put("table", relay.tableName());
    details.put("backlog", stats.backlog());
    details.put("oldestUnsentAge", stats.oldestUnsentAge().toString());
    details.put("parked", stats.parked());
    details.put("published", stats.published());
    details.put("failures", stats.failures());
    details.put("statsReadAt", stats.readAt().toString());
    return details;
  }
}
