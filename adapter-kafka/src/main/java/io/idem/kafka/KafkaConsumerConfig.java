package io.idem.kafka;

import io.idem.spi.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Immutable configuration of a {@link KafkaIdempotentConsumer}. Build with
 * {@link #builder(String, String...)}; {@link Builder#build()} validates and copies, naming the
 * setting and its value in every error. Thread-safe.
 *
 * <p>The adapter owns the settings its guarantee depends on and sets them on the
 * {@code KafkaConsumer} itself: {@code enable.auto.commit=false} (offsets are committed only after
 * the database transaction; a {@code true} passed in is overridden with a warning), byte-array
 * deserializers, {@code group.id} and {@code max.poll.records}. Every other
 * <a href="https://kafka.apache.org/documentation/#consumerconfigs">consumer setting</a> passes
 * through {@link Builder#consumerProperty(String, Object)}; {@code auto.offset.reset} defaults to
 * {@value #DEFAULT_AUTO_OFFSET_RESET} so that a new group starts with the records already on the
 * topic, and {@code isolation.level} to {@value #DEFAULT_ISOLATION_LEVEL} (Kafka's own default is
 * {@code read_uncommitted}) so that records of aborted producer transactions are never applied.
 *
 * <p>Dead-lettered records are published by a {@code KafkaProducer} with {@code acks=all} and
 * {@code enable.idempotence=true}, which cannot be weakened; other
 * <a href="https://kafka.apache.org/documentation/#producerconfigs">producer settings</a> pass
 * through {@link Builder#producerProperty(String, Object)}.
 */
public final class KafkaConsumerConfig {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaConsumerConfig.class);

  /**
   * Default {@link #maxPollRecords()}: {@value}. Bounds the work between two polls: with a handler
   * taking {@code t}, a poll's records take about {@code maxPollRecords × t}; past half of {@code
   * max.poll.interval.ms} (Kafka's default 5 min) the rest is sought back and fetched by the next
   * poll, and in batch mode each batch is cut to fit the time left ({@link #maxBatchSize()}).
   */
  public static final int DEFAULT_MAX_POLL_RECORDS = 100;

  /** Default {@link #pollTimeout()}: 500 ms. */
  public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(500);

  /**
   * Default {@link #commitInterval()}: 100 ms. Chosen from measurements (BENCHMARKS.md, "Measured
   * on an idle machine: runs and the 100 ms commit interval"): the per-message consumer ran 19 %
   * faster (median events/s) than with a {@code commitSync} after every poll of 100 records, on a
   * local broker; a crash then redelivers at most the records settled in 100 ms plus one record's
   * (one batch's) time and a {@code commitSync} ({@link #commitInterval()}), which the store skips
   * as duplicates.
   */
  public static final Duration DEFAULT_COMMIT_INTERVAL = Duration.ofMillis(100);

  /**
   * Default {@link #maxBatchSize()}: {@value}, batch mode — equal to {@link
   * #DEFAULT_MAX_POLL_RECORDS}, so a partition's share of a poll can go in one database
   * transaction (a batch never spans two polls nor two partitions; raise both together). Batch
   * mode is the default because a run of {@code n} records costs one claim and one COMMIT instead
   * of {@code n} (measured with the main job, docs/BROKERS.md, Kafka, "Batch mode": batches of 100
   * gave 1.5–1.9× the events/s of per-message mode on a loaded 2-core machine), and it keeps every
   * guarantee: when a record of a batch fails, the batch is rolled back and redone record by
   * record, so the failing record alone is retried, charged an attempt or dead-lettered and never
   * poisons its neighbours, and each offset is committed only after the transaction that applied
   * its record; the adapter kit's crash matrix passes on this default.
   *
   * <p>Each batch is also sized to the time left in the poll's budget (half of {@code
   * max.poll.interval.ms}): with the time per record measured on the consumer's completed runs, at
   * most {@code floor(timeLeft / (2 × perRecord))} records (at least 1), the consumer's first run
   * being a single record; so a slow handler is not pushed out of the group (see {@link
   * #maxBatchSize()}).
   *
   * <p>What it changes for a handler: the records of a run share one transaction (and one
   * rollback), and after a failure the handler sees the records before the failing one again —
   * rolled back, then redone one by one (handler code outside the transaction, such as an HTTP
   * call, runs twice for them). {@code maxBatchSize(1)} is per-message mode: one transaction per
   * record, {@link io.idem.IdempotentConsumer#process} per record.
   */
  public static final int DEFAULT_MAX_BATCH_SIZE = 100;

  /**
   * Default {@link #concurrency()}: {@value}, every partition processed on the consumer's own
   * thread, one after the other.
   */
  public static final int DEFAULT_CONCURRENCY = 1;

  /** Default {@link #shutdownTimeout()}: 30 s. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

  /**
   * Suffix of the default dead-letter topic name, {@code <topic>}{@value} (the convention of
   * Spring Kafka's {@code DeadLetterPublishingRecoverer}).
   */
  public static final String DEFAULT_DEAD_LETTER_SUFFIX = ".DLT";

  /**
   * Default {@code max.request.size} of the dead-letter producer: {@value} bytes (1 MiB + 64 KiB),
   * so that the copy of a record at Kafka's default 1 MiB limit, plus its reason headers, can be
   * sent. Override with {@code producerProperty("max.request.size", …)}.
   */
  public static final int DEFAULT_DEAD_LETTER_MAX_REQUEST_SIZE = 1024 * 1024 + 64 * 1024;

  /** Default {@code auto.offset.reset} unless given as a consumer property: {@value}. */
  public static final String DEFAULT_AUTO_OFFSET_RESET = "earliest";

  /**
   * Default {@code isolation.level} unless given as a consumer property: {@value}. Kafka's own
   * default, {@code read_uncommitted}, hands out records of producer transactions that are later
   * aborted; applying them would write effects of messages that were never sent. With
   * {@code read_committed} the consumer sees only committed transactional records (and every
   * non-transactional one), up to the last stable offset.
   */
  public static final String DEFAULT_ISOLATION_LEVEL = "read_committed";

  /** Kafka's default {@code max.poll.interval.ms}, used when the property is not given: 5 min. */
  static final Duration KAFKA_DEFAULT_MAX_POLL_INTERVAL = Duration.ofMinutes(5);

  /** Kafka's default {@code session.timeout.ms}. */
  static final Duration KAFKA_DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(45);

  /** Legal Kafka topic names (see Kafka's {@code Topic.validate}). */
  private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

  /** Consumer properties the adapter sets itself, with the builder method to use instead. */
  private static final Map<String, String> OWNED_CONSUMER_PROPERTIES = Map.of(
      ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "builder(bootstrapServers, topics)",
      ConsumerConfig.GROUP_ID_CONFIG, "groupId(...)",
      ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "maxPollRecords(...)",
      ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "nothing: the adapter reads bytes",
      ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "nothing: the adapter reads bytes");

  private static final Map<String, String> OWNED_PRODUCER_PROPERTIES = Map.of(
      ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "builder(bootstrapServers, topics)",
      ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "nothing: dead letters are copied as bytes",
      ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "nothing: dead letters are copied as bytes",
      ProducerConfig.TRANSACTIONAL_ID_CONFIG, "nothing: dead letters are not sent in transactions");

  private static final Set<String> SECRET_MARKERS = Set.of("password", "jaas", "secret", "token", "key.pass");

  private final String bootstrapServers;
  private final List<String> topics;
  private final @Nullable String groupId;
  private final Map<String, Object> consumerProperties;
  private final Map<String, Object> producerProperties;
  private final int maxPollRecords;
  private final Duration pollTimeout;
  private final Duration commitInterval;
  private final int maxBatchSize;
  private final int concurrency;
  private final Duration shutdownTimeout;
  private final Map<String, String> deadLetterTopics;

  private KafkaConsumerConfig(Builder b, Map<String, String> deadLetterTopics) {
    this.bootstrapServers = b.bootstrapServers;
    this.topics = List.copyOf(b.topics);
    this.groupId = b.groupId;
    this.consumerProperties = unmodifiableCopy(b.consumerProperties);
    this.producerProperties = unmodifiableCopy(b.producerProperties);
    this.maxPollRecords = b.maxPollRecords;
    this.pollTimeout = b.pollTimeout;
    this.commitInterval = b.commitInterval;
    this.maxBatchSize = b.maxBatchSize;
    this.concurrency = b.concurrency;
    this.shutdownTimeout = b.shutdownTimeout;
    this.deadLetterTopics = Map.copyOf(deadLetterTopics);
  }

  /**
   * Starts a configuration.
   *
   * @param bootstrapServers Kafka's {@code bootstrap.servers}: {@code host:port[,host:port…]}
   * @param topics the topics to subscribe to, at least one
   */
  public static Builder builder(String bootstrapServers, String... topics) {
    return new Builder(bootstrapServers, List.of(Objects.requireNonNull(topics, "topics")));
  }

  /** As {@link #builder(String, String...)}. */
  public static Builder builder(String bootstrapServers, Collection<String> topics) {
    return new Builder(bootstrapServers, List.copyOf(Objects.requireNonNull(topics, "topics")));
  }

  /** Kafka's {@code bootstrap.servers}. */
  public String bootstrapServers() {
    return bootstrapServers;
  }

  /** The subscribed topics, in the order given; unmodifiable. */
  public List<String> topics() {
    return topics;
  }

  /**
   * The Kafka consumer group, or {@code null} to use the pipeline's
   * {@link io.idem.IdempotentConsumer#consumerGroup() consumer group} (the default, and the usual
   * choice: one name for the Kafka group and the processed-events rows).
   */
  public @Nullable String groupId() {
    return groupId;
  }

  /** Consumer properties passed through to the {@code KafkaConsumer}, as given; unmodifiable. */
  public Map<String, Object> consumerProperties() {
    return consumerProperties;
  }

  /** Producer properties passed through to the dead-letter {@code KafkaProducer}; unmodifiable. */
  public Map<String, Object> producerProperties() {
    return producerProperties;
  }

  /** Most records one poll returns ({@code max.poll.records}); see {@link #DEFAULT_MAX_POLL_RECORDS}. */
  public int maxPollRecords() {
    return maxPollRecords;
  }

  /**
   * Longest time one {@code poll} waits for records; shorter while a paused partition is due to
   * resume. {@link KafkaIdempotentConsumer#close()} does not wait for it ({@code wakeup()} ends
   * the poll at once).
   */
  public Duration pollTimeout() {
    return pollTimeout;
  }

  /**
   * How long a settled record's offset may wait for its commit (default {@link
   * #DEFAULT_COMMIT_INTERVAL}, 100 ms). The interval since the last commit is checked after each
   * record (in batch mode: each batch) settled, after each poll, and a poll waits no longer than
   * until the next commit is due while settled offsets wait; with {@link #concurrency()} above 1
   * the polling thread checks it at least every 5 ms while workers run. So the time from a
   * record's database commit to its offset commit is at most this interval plus the time of the
   * record (the batch) settled after it on the same thread, plus the {@code commitSync} round trip
   * — and a crash redelivers at most the records settled in that time (skipped by the store as
   * duplicates), plus the record in hand. Zero commits after every polled batch instead (the lag is
   * then one poll's records). Offsets are also committed, whatever the interval, before a retry
   * seeks back, when partitions are revoked, and on close. A longer interval means fewer commit
   * requests and more duplicates (skipped by the store) after a crash.
   */
  public Duration commitInterval() {
    return commitInterval;
  }

  /**
   * Most records of one partition processed in one database transaction ({@link
   * io.idem.IdempotentConsumer#processBatch(List, List, io.idem.BatchOrder)} with {@link
   * io.idem.BatchOrder#ORDERED}); 1 is per-message mode ({@link io.idem.IdempotentConsumer#process}
   * per record). Each poll's records are split per partition, and each partition's records into
   * runs of at most this many, so a batch never mixes partitions nor spans two polls (values above
   * {@link #maxPollRecords()} act as {@code maxPollRecords}). When a record of a batch fails, the
   * batch is redone record by record: the ones before it are applied once, it takes the normal
   * retry or dead-letter path, and the ones after it in its partition are handed back uncounted
   * (sought back) to come after it; other partitions go on.
   *
   * <p>A batch is cut to the time left in the poll's budget (half of {@code max.poll.interval.ms},
   * from the end of the poll; with {@link #concurrency()} above 1, from the run's hand-off to its
   * worker, so time queued for a worker counts; and never more than {@link #shutdownTimeout()}, so
   * that {@code close()} can let the batch in flight finish): the consumer keeps the time per record of its completed runs (a slower run raises it
   * at once, a faster one lowers it a quarter of the way), takes a single record while it has
   * none, and otherwise {@code clamp(floor(timeLeft / (2 × perRecord)), 1, maxBatchSize)}
   * records; once the budget is spent the partition's remaining records are sought back and
   * fetched again after the next poll, uncounted. See {@link #DEFAULT_MAX_BATCH_SIZE}.
   */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /**
   * How many partitions are processed at the same time, each on a worker thread of a pool of this
   * size (as Spring Kafka's {@code concurrency}, but in one consumer: one group member, one
   * {@code KafkaConsumer}); 1 processes every partition on the consumer's thread. Order is kept
   * within a partition (one run of its records at a time, the partition paused while its worker
   * is busy so that polling goes on and the member stays in its group), offsets are committed per
   * partition by the polling thread (the only one touching the {@code KafkaConsumer}, which is not
   * thread-safe). On revocation the in-flight work of the revoked partitions is finished (stopped
   * after the record or batch in hand) and what was settled committed; {@code close()} does the
   * same for every partition. Needs as many database connections as workers. See {@link
   * #DEFAULT_CONCURRENCY}.
   */
  public int concurrency() {
    return concurrency;
  }

  /** Longest time {@link KafkaIdempotentConsumer#close()} blocks. */
  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  /**
   * The dead-letter topic for records of {@code topic}: by default {@code topic}
   * {@value #DEFAULT_DEAD_LETTER_SUFFIX}.
   *
   * @throws IllegalArgumentException when {@code topic} is not one of {@link #topics()}
   */
  public String deadLetterTopic(String topic) {
    String name = deadLetterTopics.get(topic);
    if (name == null) {
      throw new IllegalArgumentException("topic must be one of " + topics + ", but was '" + topic + "'");
    }
    return name;
  }

  /** The effective {@code KafkaConsumer} properties for consumer group {@code group}. */
  Map<String, Object> effectiveConsumerProperties(String group) {
    Map<String, Object> props = new LinkedHashMap<>();
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, DEFAULT_AUTO_OFFSET_RESET);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, DEFAULT_ISOLATION_LEVEL);
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-" + group);
    props.putAll(consumerProperties);
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    return props;
  }

  /** The effective dead-letter {@code KafkaProducer} properties. */
  Map<String, Object> effectiveProducerProperties(String group) {
    Map<String, Object> props = new LinkedHashMap<>();
    props.put(ProducerConfig.CLIENT_ID_CONFIG, "idem-" + group + "-dlt");
    // Bounded so that a dead-letter topic outage holds the consumer loop for seconds, not minutes.
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
    // A dead-letter copy is the original record plus a few hundred bytes of reason headers: a
    // record just under the source topic's limit must still fit (the .DLT topic's own
    // max.message.bytes must allow it too, see KafkaIdempotentConsumer).
    props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, DEFAULT_DEAD_LETTER_MAX_REQUEST_SIZE);
    props.putAll(producerProperties);
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    return props;
  }

  /** The effective {@code max.poll.interval.ms}: given, or Kafka's default of 5 min. */
  Duration maxPollInterval() {
    Object value = consumerProperties.get(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG);
    return value == null ? KAFKA_DEFAULT_MAX_POLL_INTERVAL : Duration.ofMillis(Long.parseLong(value.toString().trim()));
  }

  /** {@code session.timeout.ms} in effect: the consumer property, else Kafka's default (45 s). */
  Duration sessionTimeout() {
    Object value = consumerProperties.get(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG);
    return value == null ? KAFKA_DEFAULT_SESSION_TIMEOUT : Duration.ofMillis(Long.parseLong(value.toString().trim()));
  }

  @Override
  public String toString() {
    return "KafkaConsumerConfig[bootstrapServers=" + bootstrapServers + ", topics=" + topics
        + ", groupId=" + (groupId == null ? "(pipeline's consumer group)" : groupId)
        + ", maxPollRecords=" + maxPollRecords + ", pollTimeout=" + pollTimeout
        + ", commitInterval=" + commitInterval + ", maxBatchSize=" + maxBatchSize
        + ", concurrency=" + concurrency
        + ", shutdownTimeout=" + shutdownTimeout
        + ", deadLetterTopics=" + deadLetterTopics
        + ", consumerProperties=" + masked(consumerProperties)
        + ", producerProperties=" + masked(producerProperties) + "]";
  }

  private static Map<String, Object> masked(Map<String, Object> props) {
    Map<String, Object> out = new LinkedHashMap<>();
    props.forEach((k, v) -> {
      String lower = k.toLowerCase(Locale.ROOT);
      out.put(k, SECRET_MARKERS.stream().anyMatch(lower::contains) ? "[hidden]" : v);
    });
    return out;
  }

  private static Map<String, Object> unmodifiableCopy(Map<String, Object> props) {
    return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(props));
  }

  /** Builder of {@link KafkaConsumerConfig}. Not thread-safe. */
  public static final class Builder {
    private final String bootstrapServers;
    private final List<String> topics;
    private @Nullable String groupId;
    private final Map<String, Object> consumerProperties = new LinkedHashMap<>();
    private final Map<String, Object> producerProperties = new LinkedHashMap<>();
    private int maxPollRecords = DEFAULT_MAX_POLL_RECORDS;
    private Duration pollTimeout = DEFAULT_POLL_TIMEOUT;
    private Duration commitInterval = DEFAULT_COMMIT_INTERVAL;
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private int concurrency = DEFAULT_CONCURRENCY;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private UnaryOperator<String> deadLetterTopicNaming = topic -> topic + DEFAULT_DEAD_LETTER_SUFFIX;

    private Builder(String bootstrapServers, List<String> topics) {
      this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.topics = new ArrayList<>(topics);
      for (String topic : topics) {
        Objects.requireNonNull(topic, "topics must not contain null");
      }
    }

    /**
     * The Kafka {@code group.id}. Default: the pipeline's
     * {@link io.idem.IdempotentConsumer#consumerGroup() consumer group}.
     */
    public Builder groupId(String value) {
      this.groupId = Objects.requireNonNull(value, "groupId");
      return this;
    }

    /**
     * A {@code KafkaConsumer} property passed through as given (security, timeouts,
     * {@code auto.offset.reset}, {@code isolation.level}, {@code partition.assignment.strategy},
     * {@code group.protocol}…); a value given here replaces the adapter's default.
     * {@code enable.auto.commit=true} is overridden to {@code false} with a warning. Properties the
     * adapter owns ({@code bootstrap.servers}, {@code group.id}, {@code max.poll.records}, the
     * deserializers) are refused by {@link #build()}.
     */
    public Builder consumerProperty(String name, Object value) {
      consumerProperties.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Every entry of {@code values}, as {@link #consumerProperty(String, Object)}. */
    public Builder consumerProperties(Map<String, ?> values) {
      values.forEach(this::consumerProperty);
      return this;
    }

    /**
     * A dead-letter {@code KafkaProducer} property passed through as given (security, timeouts,
     * compression…). Defaults the adapter sets and that may be replaced: {@code max.block.ms} and
     * {@code request.timeout.ms} 10 s, {@code delivery.timeout.ms} 30 s. {@code acks} other than
     * {@code all}, {@code enable.idempotence=false}, {@code transactional.id},
     * {@code bootstrap.servers} and the serializers are refused by {@link #build()}.
     */
    public Builder producerProperty(String name, Object value) {
      producerProperties.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Every entry of {@code values}, as {@link #producerProperty(String, Object)}. */
    public Builder producerProperties(Map<String, ?> values) {
      values.forEach(this::producerProperty);
      return this;
    }

    /** Default {@value KafkaConsumerConfig#DEFAULT_MAX_POLL_RECORDS}; at least 1. */
    public Builder maxPollRecords(int value) {
      this.maxPollRecords = value;
      return this;
    }

    /** Default 500 ms; positive. */
    public Builder pollTimeout(Duration value) {
      this.pollTimeout = Objects.requireNonNull(value, "pollTimeout");
      return this;
    }

    /** Default 100 ms ({@link #DEFAULT_COMMIT_INTERVAL}); zero commits after every polled batch; not negative. */
    public Builder commitInterval(Duration value) {
      this.commitInterval = Objects.requireNonNull(value, "commitInterval");
      return this;
    }

    /**
     * Most records of one partition per database transaction; default {@value
     * KafkaConsumerConfig#DEFAULT_MAX_BATCH_SIZE} (batch mode), 1 is per-message mode. At least 1;
     * see {@link KafkaConsumerConfig#maxBatchSize()}.
     */
    public Builder maxBatchSize(int value) {
      this.maxBatchSize = value;
      return this;
    }

    /**
     * Partitions processed at the same time, on a pool of this many worker threads; default
     * {@value KafkaConsumerConfig#DEFAULT_CONCURRENCY} (the consumer's own thread). At least 1;
     * see {@link KafkaConsumerConfig#concurrency()}.
     */
    public Builder concurrency(int value) {
      this.concurrency = value;
      return this;
    }

    /** Default 30 s; positive. */
    public Builder shutdownTimeout(Duration value) {
      this.shutdownTimeout = Objects.requireNonNull(value, "shutdownTimeout");
      return this;
    }

    /**
     * Names the dead-letter topic of each subscribed topic. Default {@code topic ->
     * topic + ".DLT"}. Applied once per topic by {@link #build()}; the result must be a legal topic
     * name other than any subscribed topic. The dead-letter topic must exist, or the broker must
     * create it on first use ({@code auto.create.topics.enable}).
     */
    public Builder deadLetterTopicNaming(UnaryOperator<String> value) {
      this.deadLetterTopicNaming = Objects.requireNonNull(value, "deadLetterTopicNaming");
      return this;
    }

    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException naming the setting and its value when one is invalid
     */
    public KafkaConsumerConfig build() {
      if (bootstrapServers.isBlank()) {
        throw new IllegalArgumentException(
            "bootstrapServers must not be blank, but was '" + bootstrapServers + "'");
      }
      if (topics.isEmpty()) {
        throw new IllegalArgumentException("topics must not be empty, but was []");
      }
      if (Set.copyOf(topics).size() != topics.size()) {
        throw new IllegalArgumentException("topics must not repeat a topic, but was " + topics);
      }
      for (String topic : topics) {
        requireTopicName("topics", topic);
      }
      if (groupId != null && groupId.isBlank()) {
        throw new IllegalArgumentException("groupId must not be blank, but was '" + groupId + "'");
      }
      Settings.atLeast("maxPollRecords", maxPollRecords, 1);
      Settings.positive("pollTimeout", pollTimeout);
      Settings.notNegative("commitInterval", commitInterval);
      Settings.atLeast("maxBatchSize", maxBatchSize, 1);
      Settings.atLeast("concurrency", concurrency, 1);
      Settings.positive("shutdownTimeout", shutdownTimeout);
      checkConsumerProperties();
      checkProducerProperties();
      Map<String, String> deadLetterTopics = new LinkedHashMap<>();
      for (String topic : topics) {
        String dlt = deadLetterTopicNaming.apply(topic);
        requireTopicName("deadLetterTopicNaming(" + topic + ")", dlt);
        if (topics.contains(dlt)) {
          throw new IllegalArgumentException("deadLetterTopicNaming(" + topic
              + ") must not name a subscribed topic, but was '" + dlt + "'");
        }
        deadLetterTopics.put(topic, dlt);
      }
      return new KafkaConsumerConfig(this, deadLetterTopics);
    }

    private void checkConsumerProperties() {
      OWNED_CONSUMER_PROPERTIES.forEach((name, instead) -> {
        if (consumerProperties.containsKey(name)) {
          throw new IllegalArgumentException("consumer property " + name + " is set by the adapter (use "
              + instead + "), but was given as '" + consumerProperties.get(name) + "'");
        }
      });
      Object autoCommit = consumerProperties.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
      if (autoCommit != null && !"false".equalsIgnoreCase(autoCommit.toString().trim())) {
        LOG.warn("consumer property enable.auto.commit={} overridden to false: Idem commits offsets"
            + " itself, only after the database transaction committed", autoCommit);
        consumerProperties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      }
      Object interval = consumerProperties.get(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG);
      if (interval != null) {
        long ms;
        try {
          ms = Long.parseLong(interval.toString().trim());
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(
              "consumer property max.poll.interval.ms must be a number of milliseconds, but was '" + interval + "'", e);
        }
        if (ms < 1) {
          throw new IllegalArgumentException("consumer property max.poll.interval.ms must be >= 1, but was " + ms);
        }
      }
    }

    private void checkProducerProperties() {
      OWNED_PRODUCER_PROPERTIES.forEach((name, instead) -> {
        if (producerProperties.containsKey(name)) {
          throw new IllegalArgumentException("producer property " + name + " is set by the adapter (use "
              + instead + "), but was given as '" + producerProperties.get(name) + "'");
        }
      });
      Object acks = producerProperties.get(ProducerConfig.ACKS_CONFIG);
      if (acks != null && !Set.of("all", "-1").contains(acks.toString().trim().toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException("producer property acks must be 'all' (a dead letter must be"
            + " stored before its original is removed), but was '" + acks + "'");
      }
      Object idempotence = producerProperties.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
      if (idempotence != null && !"true".equalsIgnoreCase(idempotence.toString().trim())) {
        throw new IllegalArgumentException(
            "producer property enable.idempotence must be true, but was '" + idempotence + "'");
      }
    }

    private static void requireTopicName(String setting, String name) {
      if (name == null || !TOPIC.matcher(name).matches() || name.equals(".") || name.equals("..")) {
        throw new IllegalArgumentException(setting + " must be legal Kafka topic names (1 to 249 of"
            + " [a-zA-Z0-9._-], not '.' or '..'), but was '" + name + "'");
      }
    }
  }
}
