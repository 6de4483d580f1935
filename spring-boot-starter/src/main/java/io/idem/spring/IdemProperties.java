package io.idem.spring;

import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * Idem's settings under {@code idem.*} (docs/SPRING-BOOT.md lists them with their defaults).
 * Bound once at start-up by Spring Boot, and checked there: a value out of range fails start-up
 * naming the property and the value (this class is its own {@link Validator}, which Spring Boot
 * applies to a {@code @ConfigurationProperties} bean without a Bean Validation provider), and a
 * property under {@code idem.} that no Idem class binds — a typo — fails it too ({@link
 * IdemPropertiesCheck}). Not thread-safe while bound, read-only afterwards.
 */
@ConfigurationProperties("idem")
public class IdemProperties implements Validator {
  /** Largest {@code idem.consumers.<name>.prefetch}: AMQP's {@code basicQos} count is 16 bits. */
  private static final int MAX_PREFETCH = 65_535;

  /**
   * Whether Idem is on: the one way to turn it off. With {@code false} no Idem bean is created and
   * {@code @Idempotent} methods run as plain methods.
   */
  private boolean enabled = true;

  /**
   * The name of the {@code DataSource} bean holding Idem's table and the listeners' writes; needed
   * only when the application has several and none is {@code @Primary}.
   */
  private @Nullable String datasource;

  /**
   * The name of the {@code PlatformTransactionManager} bean Idem opens each message's transaction
   * with; needed only when several manage the data source.
   */
  private @Nullable String transactionManager;

  /**
   * The consumer group of an {@code @Idempotent} listener that names none. Keys are unique per
   * group: two listeners with the same group skip each other's keys.
   */
  private @Nullable String consumerGroup;

  /** Processed-events table, {@code table} or {@code schema.table}. */
  private String tableName = MyBatisProcessedEventStore.DEFAULT_TABLE;

  /**
   * How the processed-events table is created: {@code auto} runs Idem's migration with a Flyway
   * and history table of its own ({@code idem_schema_history}) when the application has a Flyway
   * bean (after it migrated),
   * else creates the table if missing; {@code flyway}, {@code create} force one of them; {@code
   * none} only checks that the table is there.
   */
  private Schema schema = Schema.AUTO;

  /**
   * How long a claim waits behind another open transaction holding the same key before the
   * transaction is retried; 0 waits without bound.
   */
  private Duration claimLockTimeout = MyBatisProcessedEventStore.DEFAULT_CLAIM_LOCK_TIMEOUT;

  /**
   * Consumers Idem runs itself, on its own adapters, by name: {@code
   * idem.consumers.<name>.broker=kafka|rabbitmq|sqs|jms} and the settings below; started and
   * stopped with the application context.
   */
  private final Map<String, Consumer> consumers = new LinkedHashMap<>();

  private final Key key = new Key();
  private final Retry retry = new Retry();
  private final Retention retention = new Retention();
  private final DeadLetter deadLetter = new DeadLetter();
  private final IdemOutboxProperties outbox = new IdemOutboxProperties();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public @Nullable String getDatasource() {
    return datasource;
  }

  public void setDatasource(@Nullable String datasource) {
    this.datasource = datasource;
  }

  public @Nullable String getTransactionManager() {
    return transactionManager;
  }

  public void setTransactionManager(@Nullable String transactionManager) {
    this.transactionManager = transactionManager;
  }

  public DeadLetter getDeadLetter() {
    return deadLetter;
  }

  public IdemOutboxProperties getOutbox() {
    return outbox;
  }

  @Override
  public boolean supports(Class<?> type) {
    return IdemProperties.class.isAssignableFrom(type);
  }

  /**
   * Checks what Idem's builders would refuse later, so that the application stops at start-up
   * with the property's name: {@code idem.retry.*} (Idem's {@code RetryPolicy}), the key settings,
   * durations that must not be negative, the consumers' required fields and their ranges ({@code
   * concurrency}, {@code max-batch-size}, {@code prefetch}) and the outbox's settings.
   */
  @Override
  public void validate(Object target, Errors errors) {
    IdemProperties p = (IdemProperties) target;
    try {
      p.getRetry().toPolicy();
    } catch (IllegalArgumentException e) {
      errors.rejectValue("retry", "invalid", "idem.retry: " + e.getMessage());
    }
    if (p.getClaimLockTimeout().isNegative()) {
      errors.rejectValue("claimLockTimeout", "min",
          "idem.claim-lock-timeout must not be negative, but was " + p.getClaimLockTimeout());
    }
    if (p.getRetention().getRetention().isNegative() || p.getRetention().getRetention().isZero()) {
      errors.rejectValue("retention.retention", "min",
          "idem.retention.retention must be positive, but was " + p.getRetention().getRetention());
    }
    if (p.getRetention().getInterval().isNegative() || p.getRetention().getInterval().isZero()) {
      errors.rejectValue("retention.interval", "min",
          "idem.retention.interval must be positive, but was " + p.getRetention().getInterval());
    }
    if (p.getKey().getHeader() != null && p.getKey().getHeader().isBlank()) {
      errors.rejectValue("key.header", "blank", "idem.key.header must not be blank");
    }
    if (p.getKey().getJsonPointer() != null && !p.getKey().getJsonPointer().isEmpty()
        && !p.getKey().getJsonPointer().startsWith("/")) {
      errors.rejectValue("key.jsonPointer", "pointer", "idem.key.json-pointer must be an RFC 6901"
          + " pointer starting with '/', but was '" + p.getKey().getJsonPointer() + "'");
    }
    p.getConsumers().forEach((name, consumer) -> {
      if (consumer.getBroker() == null) {
        errors.rejectValue("consumers", "required", "idem.consumers." + name + ".broker is required"
            + " (kafka, rabbitmq, sqs or jms)");
      }
      if (consumer.getSource() == null || consumer.getSource().isBlank()) {
        errors.rejectValue("consumers", "required", "idem.consumers." + name + ".source is required");
      }
      if (consumer.getHandler() == null || consumer.getHandler().isBlank()) {
        errors.rejectValue("consumers", "required", "idem.consumers." + name + ".handler is required"
            + " (the name of a MessageHandler<SqlSession> or KeyedMessageHandler<SqlSession> bean)");
      }
      if (consumer.getConcurrency() != null && consumer.getConcurrency() < 1) {
        errors.rejectValue("consumers", "min", "idem.consumers." + name + ".concurrency must be >= 1,"
            + " but was " + consumer.getConcurrency());
      }
      if (consumer.getMaxBatchSize() != null && consumer.getMaxBatchSize() < 1) {
        errors.rejectValue("consumers", "min", "idem.consumers." + name + ".max-batch-size must be >= 1"
            + " (1 is per-message mode), but was " + consumer.getMaxBatchSize());
      }
      if (consumer.getPrefetch() != null
          && (consumer.getPrefetch() < 1 || consumer.getPrefetch() > MAX_PREFETCH)) {
        errors.rejectValue("consumers", "range", "idem.consumers." + name + ".prefetch must be in 1.."
            + MAX_PREFETCH + ", but was " + consumer.getPrefetch());
      }
    });
    p.getOutbox().validate(errors);
  }

  public @Nullable String getConsumerGroup() {
    return consumerGroup;
  }

  public void setConsumerGroup(@Nullable String consumerGroup) {
    this.consumerGroup = consumerGroup;
  }

  public String getTableName() {
    return tableName;
  }

  public void setTableName(String tableName) {
    this.tableName = tableName;
  }

  public Schema getSchema() {
    return schema;
  }

  public void setSchema(Schema schema) {
    this.schema = schema;
  }

  public Duration getClaimLockTimeout() {
    return claimLockTimeout;
  }

  public void setClaimLockTimeout(Duration claimLockTimeout) {
    this.claimLockTimeout = claimLockTimeout;
  }

  public Map<String, Consumer> getConsumers() {
    return consumers;
  }

  public Key getKey() {
    return key;
  }

  public Retry getRetry() {
    return retry;
  }

  public Retention getRetention() {
    return retention;
  }

  /** How the processed-events table comes to exist; see {@link #getSchema()}. */
  public enum Schema {
    /** Flyway when the application has a Flyway bean, else create-if-missing. */
    AUTO,
    /** Idem's migration through a Flyway of its own, history table {@code idem_schema_history}. */
    FLYWAY,
    /** store-jdbc's {@code createTableIfMissing}. */
    CREATE,
    /** Nothing is created; the table is checked at start-up. */
    NONE
  }

  /**
   * Where the idempotency key is found. Unset: Idem's default chain (header {@code
   * idempotency-key}, then the CloudEvents source and id; a message with neither is dead-lettered).
   */
  public static class Key {
    /** Read the key from this message header (Kafka header, AMQP header, JMS property). */
    private @Nullable String header;

    /** Read the key from the JSON payload at this RFC 6901 pointer, e.g. {@code /paymentId}. */
    private @Nullable String jsonPointer;

    public @Nullable String getHeader() {
      return header;
    }

    public void setHeader(@Nullable String header) {
      this.header = header;
    }

    public @Nullable String getJsonPointer() {
      return jsonPointer;
    }

    public void setJsonPointer(@Nullable String jsonPointer) {
      this.jsonPointer = jsonPointer;
    }
  }

  /** Idem's {@link RetryPolicy}: who decides retries and dead letters (docs/SPRING-BOOT.md). */
  public static class Retry {
    /** Deliveries of a failing message, the first included, before it is dead-lettered. */
    private int maxAttempts = RetryPolicy.DEFAULT_MAX_ATTEMPTS;

    /** Backoff after the first failure. */
    private Duration initialBackoff = RetryPolicy.DEFAULT_INITIAL_BACKOFF;

    /** Upper bound of the backoff. */
    private Duration maxBackoff = RetryPolicy.DEFAULT_MAX_BACKOFF;

    /** Backoff growth per failed attempt. */
    private double multiplier = RetryPolicy.DEFAULT_MULTIPLIER;

    /** Random spread of each backoff, 0 to 1. */
    private double jitter = RetryPolicy.DEFAULT_JITTER;

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

    public double getMultiplier() {
      return multiplier;
    }

    public void setMultiplier(double multiplier) {
      this.multiplier = multiplier;
    }

    public double getJitter() {
      return jitter;
    }

    public void setJitter(double jitter) {
      this.jitter = jitter;
    }

    RetryPolicy toPolicy() {
      return RetryPolicy.builder().maxAttempts(maxAttempts).initialBackoff(initialBackoff)
          .maxBackoff(maxBackoff).multiplier(multiplier).jitter(jitter).build();
    }
  }

  /** How dead letters are written, beyond Idem's {@code idem-*} reason headers. */
  public static class DeadLetter {
    /**
     * Kafka: also write Spring Kafka's {@code DeadLetterPublishingRecoverer} headers ({@code
     * kafka_dlt-original-topic}, {@code kafka_dlt-original-partition}, {@code
     * kafka_dlt-original-offset}, {@code kafka_dlt-exception-fqcn}, {@code
     * kafka_dlt-exception-message} …, with Spring Kafka's encodings), so that tooling written for
     * Spring Kafka's DLTs reads Idem's dead letters.
     */
    private boolean springKafkaHeaders;

    public boolean isSpringKafkaHeaders() {
      return springKafkaHeaders;
    }

    public void setSpringKafkaHeaders(boolean springKafkaHeaders) {
      this.springKafkaHeaders = springKafkaHeaders;
    }
  }

  /** store-jdbc's {@link RetentionJob}: deletes markers older than the retention. */
  public static class Retention {
    /** Run the retention job in this application. */
    private boolean enabled = true;

    /** How long a marker is kept; longer than any redelivery can come. */
    private Duration retention = RetentionJob.DEFAULT_RETENTION;

    /** Pause between two runs. */
    private Duration interval = RetentionJob.DEFAULT_INTERVAL;

    /**
     * Accept a listener source whose redeliveries are unbounded (a compacted topic, infinite
     * retention): a message older than the retention is then applied again.
     */
    private boolean acceptReplaysBeyondWindow;

    public boolean isAcceptReplaysBeyondWindow() {
      return acceptReplaysBeyondWindow;
    }

    public void setAcceptReplaysBeyondWindow(boolean acceptReplaysBeyondWindow) {
      this.acceptReplaysBeyondWindow = acceptReplaysBeyondWindow;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getRetention() {
      return retention;
    }

    public void setRetention(Duration retention) {
      this.retention = retention;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }
  }

  /** The broker of an {@code idem.consumers.<name>} entry. */
  public enum Broker {
    /** {@code idem-kafka}: {@code KafkaIdempotentConsumer}. */
    KAFKA,
    /** {@code idem-rabbitmq}: {@code RabbitIdempotentConsumer}. */
    RABBITMQ,
    /** {@code idem-sqs}: {@code SqsIdempotentConsumer}. */
    SQS,
    /** {@code idem-jms}: {@code JmsIdempotentConsumer} on the application's ConnectionFactory. */
    JMS
  }

  /** One consumer Idem runs on its own adapter ({@code idem.consumers.<name>.*}). */
  public static class Consumer {
    /** Which adapter runs it; its module must be on the classpath. */
    private @Nullable Broker broker;

    /**
     * Name of the bean handling each message: a {@code MessageHandler<SqlSession>} or {@code
     * KeyedMessageHandler<SqlSession>}, run in Idem's transaction (its JdbcTemplate/JPA writes
     * join it).
     */
    private @Nullable String handler;

    /** The consumer group of its keys; default: the consumer's name. */
    private @Nullable String consumerGroup;

    /** Kafka topic, RabbitMQ queue, SQS queue URL or JMS queue consumed. */
    private @Nullable String source;

    /**
     * Dead-letter destination: Kafka topic (default {@code <topic>.DLT}), RabbitMQ queue (default
     * {@code <queue>.dlq}), SQS queue URL (default: the queue's RedrivePolicy), JMS queue
     * (default {@code <queue>.dlq}).
     */
    private @Nullable String deadLetter;

    /** Worker threads; default: the adapter's. */
    private @Nullable Integer concurrency;

    /**
     * Most messages run through one database transaction (batch mode; one claim, one COMMIT, then
     * the acknowledgements), at least 1; 1 is per-message mode, one transaction per message.
     * Default: the adapter's {@code DEFAULT_MAX_BATCH_SIZE} (docs/BROKERS.md).
     */
    private @Nullable Integer maxBatchSize;

    /**
     * RabbitMQ: the {@code basicQos} prefetch count, unacknowledged deliveries per consumer,
     * 1..65535; default {@code RabbitConsumerConfig.defaultPrefetch(maxBatchSize)} (20 with the default batch size). A RabbitMQ batch is never
     * larger than it. Not used by the other brokers.
     */
    private @Nullable Integer prefetch;

    /** How long closing waits for in-flight messages; default: the adapter's. */
    private @Nullable Duration shutdownTimeout;

    /** Kafka: the bootstrap servers; default {@code spring.kafka.bootstrap-servers}. */
    private @Nullable String bootstrapServers;

    /** Kafka: the consumer group id; default: the consumer group. */
    private @Nullable String groupId;

    /** Kafka: further consumer properties, as the Kafka client names them. */
    private final Map<String, String> kafkaProperties = new LinkedHashMap<>();

    /** RabbitMQ: the AMQP URI; default: the adapter's ({@code amqp://localhost}). */
    private @Nullable String uri;

    /** RabbitMQ: declare the queue and its dead-letter queue. */
    private boolean declareTopology;

    /** SQS: the endpoint (an emulator, a VPC endpoint); default: the SDK's. */
    private java.net.@Nullable URI endpoint;

    /** SQS: the region; default: the SDK's chain. */
    private @Nullable String region;

    public @Nullable Broker getBroker() {
      return broker;
    }

    public void setBroker(@Nullable Broker broker) {
      this.broker = broker;
    }

    public @Nullable String getHandler() {
      return handler;
    }

    public void setHandler(@Nullable String handler) {
      this.handler = handler;
    }

    public @Nullable String getConsumerGroup() {
      return consumerGroup;
    }

    public void setConsumerGroup(@Nullable String consumerGroup) {
      this.consumerGroup = consumerGroup;
    }

    public @Nullable String getSource() {
      return source;
    }

    public void setSource(@Nullable String source) {
      this.source = source;
    }

    public @Nullable String getDeadLetter() {
      return deadLetter;
    }

    public void setDeadLetter(@Nullable String deadLetter) {
      this.deadLetter = deadLetter;
    }

    public @Nullable Integer getConcurrency() {
      return concurrency;
    }

    public void setConcurrency(@Nullable Integer concurrency) {
      this.concurrency = concurrency;
    }

    /**
     * Most messages one transaction takes ({@code maxBatchSize(..)} of the adapter's config
     * builder): a count of messages, at least 1 (checked at start-up by {@link
     * IdemProperties#validate}); 1 is per-message mode. {@code null} (unset) leaves the adapter's
     * default, its config's {@code DEFAULT_MAX_BATCH_SIZE} constant ({@code KafkaConsumerConfig},
     * {@code RabbitConsumerConfig}, {@code SqsConsumerConfig}, {@code JmsConsumerConfig}; the
     * values are in docs/BROKERS.md). Caps of the broker still apply: an SQS batch never spans two
     * receives (at most 10 messages), a RabbitMQ batch never exceeds {@link #getPrefetch()}.
     */
    public @Nullable Integer getMaxBatchSize() {
      return maxBatchSize;
    }

    public void setMaxBatchSize(@Nullable Integer maxBatchSize) {
      this.maxBatchSize = maxBatchSize;
    }

    /**
     * RabbitMQ only: the {@code basicQos} prefetch count ({@code RabbitConsumerConfig.Builder
     * prefetch(..)}), unacknowledged deliveries per consumer, 1..65535 (checked at start-up by
     * {@link IdemProperties#validate}); {@code null} (unset) leaves the adapter's derived
     * default, {@code RabbitConsumerConfig.defaultPrefetch(maxBatchSize)} (20 with the default batch size). It must be at least {@link #getConcurrency()} (the
     * adapter refuses otherwise, at start-up). Ignored by the other brokers, like the other
     * broker-specific settings here.
     */
    public @Nullable Integer getPrefetch() {
      return prefetch;
    }

    public void setPrefetch(@Nullable Integer prefetch) {
      this.prefetch = prefetch;
    }

    public @Nullable Duration getShutdownTimeout() {
      return shutdownTimeout;
    }

    public void setShutdownTimeout(@Nullable Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
    }

    public @Nullable String getBootstrapServers() {
      return bootstrapServers;
    }

    public void setBootstrapServers(@Nullable String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
    }

    public @Nullable String getGroupId() {
      return groupId;
    }

    public void setGroupId(@Nullable String groupId) {
      this.groupId = groupId;
    }

    public Map<String, String> getKafkaProperties() {
      return kafkaProperties;
    }

    public @Nullable String getUri() {
      return uri;
    }

    public void setUri(@Nullable String uri) {
      this.uri = uri;
    }

    public boolean isDeclareTopology() {
      return declareTopology;
    }

    public void setDeclareTopology(boolean declareTopology) {
      this.declareTopology = declareTopology;
    }

    public java.net.@Nullable URI getEndpoint() {
      return endpoint;
    }

    public void setEndpoint(java.net.@Nullable URI endpoint) {
      this.endpoint = endpoint;
    }

    public @Nullable String getRegion() {
      return region;
    }

    public void setRegion(@Nullable String region) {
      this.region = region;
    }
  }
}
