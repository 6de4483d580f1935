package io.idem.spring;

import io.idem.ConsumerHealth;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * One Actuator health indicator per {@code idem.consumers.<name>}, under {@code idemConsumers}:
 * UP when the consumer is {@link ConsumerHealth#isReady() ready} (running, connected, the store
 * reaching the database), DOWN otherwise, with the adapter's health view as details. Reads
 * snapshots only: no broker or database access. Thread-safe.
 */
final class IdemConsumersHealth {
  private IdemConsumersHealth() {}

  static CompositeHealthContributor of(IdemConsumers consumers) {
    Map<String, HealthContributor> indicators = new LinkedHashMap<>();
    for (String name : consumers.consumerNames()) {
      indicators.put(name, (HealthIndicator) () -> health(consumers.health().get(name)));
    }
    return CompositeHealthContributor.fromMap(indicators);
  }

  static Health health(ConsumerHealth health) {
    if (health == null) {
      return Health.down().withDetail("running", false).build();
    }
    Health.Builder builder = health.isReady() ? Health.up() : Health.down();
    builder.withDetail("running", health.running())
        .withDetail("connected", health.connected())
        .withDetail("consuming", health.consuming())
        .withDetail("heldForRetry", health.heldForRetry())
        .withDetail("storeAvailable", health.store().isAvailable());
    if (health.lastReceive() != null) {
      builder.withDetail("lastReceive", health.lastReceive().toString());
    }
    return builder.build();
  }
}
