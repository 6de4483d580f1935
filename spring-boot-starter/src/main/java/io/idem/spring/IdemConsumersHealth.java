package io.idem.spring;

import io.idem.ConsumerHealth;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * One Actuator health indicator per {@code idem.consumers.<name>}, under {@code idemConsumers}:
 * UP when the consumer is {@link ConsumerHealth#isReady() ready} (running, connected, the store
 * reaching the database), DOWN otherwise, with the adapter's health view as details. Reads
 * snapshots only: no broker or database access. Thread-safe.
 *
 * <p>Spring Boot 4's health API ({@code spring-boot-health}); {@code src/boot3/java} has the same
 * on Spring Boot 3.5's ({@code spring-boot-actuator}), {@code Boot3ConsumersHealth}, compiled
 * instead of this class by {@code -Pboot3}.
 */
final class IdemConsumersHealth {
  private IdemConsumersHealth() {}

  /**
   * Imported by {@link IdemHealthAutoConfiguration} (after {@link IdemAutoConfiguration}, so that
   * the conditions see its beans): the indicators, when Actuator's health is there.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class Registration {
    @Bean
    @ConditionalOnMissingBean(name = "idemConsumersHealthContributor")
    @ConditionalOnEnabledHealthIndicator("idemConsumers")
    @ConditionalOnBean(IdemConsumers.class)
    CompositeHealthContributor idemConsumersHealthContributor(IdemConsumers consumers) {
      return IdemConsumersHealth.of(consumers);
    }

    /**
     * {@code /actuator/health/idemOutboxRelay}: UP while the outbox relay runs, with its last
     * stats (backlog, age of the oldest unsent row, parked rows; no query), DOWN otherwise.
     */
    @Bean
    @ConditionalOnBean(IdemOutboxRelay.class)
    @ConditionalOnMissingBean(name = "idemOutboxRelayHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("idemOutboxRelay")
    HealthIndicator idemOutboxRelayHealthIndicator(IdemOutboxRelay relay) {
      return () -> {
        Map<String, Object> view = relay.healthView();
        Health.Builder builder = Boolean.TRUE.equals(view.get("up")) ? Health.up() : Health.down();
        view.forEach((name, value) -> {
          if (!name.equals("up")) {
            builder.withDetail(name, value);
          }
        });
        return builder.build();
      };
    }
  }

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
