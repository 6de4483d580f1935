package io.idem.spring;

import io.idem.RetryPolicy;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxRelay;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.validation.Errors;

/**
 * {@code idem.outbox.*}: the transactional outbox in a Spring application — the {@link Outbox}
 * and {@link IdemOutbox} beans over the table, and an {@link OutboxRelay} publishing its rows with
 * one of the application's broker clients, started and stopped with the context
 * (docs/SPRING-BOOT.md, "The outbox"). Bound with {@link IdemProperties}.
 */
public class IdemOutboxProperties {
  /** Whether the outbox beans are created (the table is created or checked with Idem's). */
  private boolean enabled = true;

  /** The outbox table, {@code table} or {@code schema.table}. */
  private String tableName = Outbox.DEFAULT_TABLE;

  /**
   * The broker the relay publishes to, with the application's client for it: {@code kafka} (its
   * {@code ProducerFactory}'s configuration), {@code rabbitmq} (its {@code ConnectionFactory}),
   * {@code jms} (its {@code ConnectionFactory}), {@code sqs} (its {@code SqsClient}, or Spring
   * Cloud AWS's {@code SqsAsyncClient}). Unset: the application's {@code OutboxPublisher} bean;
   * with neither, no relay runs in this application (logged at start-up).
   */
  private IdemProperties.@Nullable Broker publisher;

  /** RabbitMQ: the exchange the relay publishes to, the row's destination its routing key. */
  private String rabbitmqExchange = "";

  private final Relay relay = new Relay();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getTableName() {
    return tableName;
  }

  public void setTableName(String tableName) {
    this.tableName = tableName;
  }

  public IdemProperties.@Nullable Broker getPublisher() {
    return publisher;
  }

  public void setPublisher(IdemProperties.@Nullable Broker publisher) {
    this.publisher = publisher;
  }

  public String getRabbitmqExchange() {
    return rabbitmqExchange;
  }

  public void setRabbitmqExchange(String rabbitmqExchange) {
    this.rabbitmqExchange = rabbitmqExchange;
  }

  public Relay getRelay() {
    return relay;
  }

  void validate(Errors errors) {
    if (relay.getBatchSize() != null && relay.getBatchSize() < 1) {
      errors.rejectValue("outbox.relay.batchSize", "min",
          "idem.outbox.relay.batch-size must be >= 1, but was " + relay.getBatchSize());
    }
    if (relay.getPollInterval().isNegative() || relay.getPollInterval().isZero()) {
      errors.rejectValue("outbox.relay.pollInterval", "min",
          "idem.outbox.relay.poll-interval must be positive, but was " + relay.getPollInterval());
    }
    if (relay.getCloseTimeout().isNegative()) {
      errors.rejectValue("outbox.relay.closeTimeout", "min",
          "idem.outbox.relay.close-timeout must not be negative, but was " + relay.getCloseTimeout());
    }
    if (relay.getLeaseDuration().isNegative() || relay.getLeaseDuration().isZero()) {
      errors.rejectValue("outbox.relay.leaseDuration", "min",
          "idem.outbox.relay.lease-duration must be positive, but was " + relay.getLeaseDuration());
    }
    try {
      relay.retryPolicy();
    } catch (IllegalArgumentException e) {
      errors.rejectValue("outbox.relay", "invalid", "idem.outbox.relay: " + e.getMessage());
    }
  }

  /** The relay's settings ({@link OutboxRelay.Builder}). */
  public static class Relay {
    /** Whether this application runs a relay (when it has a publisher). */
    private boolean enabled = true;

    /**
     * Rows per batch (one claim), >= 1; unset: the relay's own default, which depends on the
     * publisher ({@code OutboxRelay.DEFAULT_PUBLISH_ALL_BATCH_SIZE}, 500, for the brokers'
     * publishers, {@code OutboxRelay.DEFAULT_BATCH_SIZE}, 100, for a row-by-row one).
     */
    private @Nullable Integer batchSize;

    /** Wait after a batch that was not full. */
    private Duration pollInterval = OutboxRelay.DEFAULT_POLL_INTERVAL;

    /** How long stopping waits for the batch in flight. */
    private Duration closeTimeout = OutboxRelay.DEFAULT_CLOSE_TIMEOUT;

    /**
     * How long a claimed batch is this relay's: a relay that died gives its rows back after it.
     * Longer than the publisher's timeout for one publish.
     */
    private Duration leaseDuration = OutboxRelay.DEFAULT_LEASE_DURATION;

    /** The relay thread's name, and the logs'. */
    private String name = "idem-outbox-relay";

    /** Publish attempts of a row before it is parked. */
    private int maxAttempts = OutboxRelay.DEFAULT_RETRY_POLICY.maxAttempts();

    /** Backoff after a row's first failed publish, doubling. */
    private Duration initialBackoff = OutboxRelay.DEFAULT_RETRY_POLICY.initialBackoff();

    /** Upper bound of that backoff. */
    private Duration maxBackoff = OutboxRelay.DEFAULT_RETRY_POLICY.maxBackoff();

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public @Nullable Integer getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(@Nullable Integer batchSize) {
      this.batchSize = batchSize;
    }

    public Duration getPollInterval() {
      return pollInterval;
    }

    public void setPollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
    }

    public Duration getCloseTimeout() {
      return closeTimeout;
    }

    public Duration getLeaseDuration() {
      return leaseDuration;
    }

    public void setLeaseDuration(Duration leaseDuration) {
      this.leaseDuration = leaseDuration;
    }

    public void setCloseTimeout(Duration closeTimeout) {
      this.closeTimeout = closeTimeout;
    }

    public String getName() {
      return name;
    }

    public void setName(String name) {
      this.name = name;
    }

    public int getMaxAttempts() {
      return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
    }

    public Duration getInitialBackoff() {
      return initialBackoff;
    }

    public void setInitialBackoff(Duration initialBackoff) {
      this.initialBackoff = initialBackoff;
    }

    public Duration getMaxBackoff() {
      return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
      this.maxBackoff = maxBackoff;
    }

    RetryPolicy retryPolicy() {
      return RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(initialBackoff)
          .maxBackoff(maxBackoff).build();
    }
  }
}
