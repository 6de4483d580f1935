package io.idem.deadletters;

import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.spi.Utf8;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * A Kafka dead-letter topic ({@code <topic>.DLT}, as {@code idem-kafka} writes it), read with a
 * consumer group of the tool's own ({@value #DEFAULT_GROUP_ID} by default, manually assigned, no
 * automatic commits): the dead letters are the records after the group's committed offset (from
 * the start of the topic when it has none).
 *
 * <ul>
 *   <li>{@link #browse} reads from the committed offsets to the end offsets taken when it starts,
 *       and commits nothing.
 *   <li>A replay sends the copy to the record's {@code idem-original-topic} (or the {@link
 *       Builder#target(String) target}) with the same key, value and headers (raw bytes; the
 *       dead-letter headers left out) from an idempotent {@code acks=all} producer, and waits for
 *       the acknowledgement; a topic that does not exist is checked for first (Admin), so that a
 *       cluster that creates topics on first use does not create it again: the dead letter stays,
 *       with a clear failure.
 *   <li>Removing a record commits the group's offset past it once every record before it in its
 *       partition is removed too; a record a selection left out holds the offset, and the records
 *       removed behind it are told apart by the record of actions ({@link #settledBy}), which
 *       {@link DeadLetterOperations} gives when it has one: they are not listed again.
 * </ul>
 *
 * <p>Two tools on one topic with the same group at the same time may replay a record twice (each
 * a duplicate the store skips); run one at a time. Not thread-safe. Needs {@code kafka-clients}.
 */
public final class KafkaDeadLetters implements DeadLetterDestination {

  /** Default {@link Builder#groupId(String)}: {@value}. */
  public static final String DEFAULT_GROUP_ID = "idem-dead-letters";

  /** Default {@link Builder#timeout(Duration)}: 30 seconds. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration POLL = Duration.ofMillis(200);

  private final String topic;
  private final @Nullable String target;
  private final Duration timeout;
  private final Map<String, Object> common;
  private final String groupId;
  private final Admin admin;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private @Nullable KafkaProducer<byte[], byte[]> producer;
  private final Set<String> existingTopics = new HashSet<>();
  private Function<Collection<String>, Set<String>> settled = ids -> Set.of();

  private KafkaDeadLetters(Builder b) {
    this.topic = b.topic;
    this.target = b.target;
    this.timeout = b.timeout;
    this.groupId = b.groupId;
    this.common = new HashMap<>(b.properties);
    common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b.bootstrapServers);
    Map<String, Object> adminProps = new HashMap<>(common);
    adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(timeout.toMillis(), 15_000));
    this.admin = Admin.create(adminProps);
    Map<String, Object> consumerProps = new HashMap<>(common);
    consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    consumerProps.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-dead-letters-" + topic);
    consumerProps.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    this.consumer = new KafkaConsumer<>(consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer());
  }

  /**
   * The dead-letter topic {@code deadLetterTopic} on the cluster at {@code bootstrapServers}.
   */
  public static Builder builder(String bootstrapServers, String deadLetterTopic) {
    return new Builder(bootstrapServers, deadLetterTopic);
  }

  @Override
  public String broker() {
    return "kafka";
  }

  @Override
  public String name() {
    return topic;
  }

  /** The tool's consumer group on the topic. */
  public String groupId() {
    return groupId;
  }

  @Override
  public void settledBy(Function<Collection<String>, Set<String>> value) {
    this.settled = Objects.requireNonNull(value, "settled");
  }

  @Override
  public List<DeadLetter> browse(int max) {
    Scan scan = scan(max);
    List<DeadLetter> out = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : scan.records) {
      if (!scan.settled.contains(id(r))) {
        out.add(deadLetter(r));
      }
    }
    return out;
  }

  @Override
  public void process(int max, Work work) {
    Scan scan = scan(max);
    Map<Integer, Long> committed = new HashMap<>(scan.start);
    Set<String> done = new HashSet<>(scan.settled);
    for (ConsumerRecord<byte[], byte[]> r : scan.records) {
      if (done.contains(id(r))) {
        continue;
      }
      DeadLetter d = deadLetter(r);
      Held held = new Held() {
        @Override
        public DeadLetter deadLetter() {
          return d;
        }

        @Override
        public void republish(String to, Map<String, String> headers) {
          send(r, d, to, headers);
        }

        @Override
        public void remove() {
          done.add(d.id());
          commitPrefix(scan, r.partition(), done, committed);
        }
      };
      try {
        work.accept(held);
      } catch (Exception e) {
        // the caller reports it; the record stays
      }
    }
    for (int partition : scan.start.keySet()) {
      commitPrefix(scan, partition, done, committed);
    }
  }

  @Override
  public String target(DeadLetter deadLetter) {
    String to = target != null ? target : deadLetter.source();
    if (to == null) {
      throw new DeadLetterException("dead letter " + deadLetter.id() + " has no " + DeadLetterHeaders.ORIGINAL_TOPIC
          + " header, so its source topic is unknown: give the topic to replay to (--to)");
    }
    if (!existingTopics.contains(to)) {
      if (!topicExists(to)) {
        throw new DeadLetterException("the topic '" + to + "' to replay dead letter " + deadLetter.id() + " to does"
            + " not exist (deleted?): nothing republished, the dead letter stays; create the topic, or replay to"
            + " another one (--to)");
      }
      existingTopics.add(to);
    }
    return to;
  }

  private void send(ConsumerRecord<byte[], byte[]> r, DeadLetter d, String to, Map<String, String> added) {
    RecordHeaders headers = new RecordHeaders();
    for (Header h : r.headers()) {
      if (!DeadLetterHeaders.DEAD_LETTER_ONLY.contains(h.key())) {
        headers.add(h.key(), h.value());
      }
    }
    added.forEach((name, value) -> headers.add(name, value.getBytes(StandardCharsets.UTF_8)));
    ProducerRecord<byte[], byte[]> copy = new ProducerRecord<>(to, null, null, r.key(), r.value(), headers);
    try {
      producer().send(copy).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new DeadLetterException("Kafka did not take the copy of " + d.id() + " on " + to + ": " + e.getCause(),
          e.getCause() != null ? e.getCause() : e);
    } catch (TimeoutException e) {
      throw new DeadLetterException("Kafka did not acknowledge the copy of " + d.id() + " on " + to + " within "
          + timeout + " (it may still be stored: replaying again is a duplicate)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeadLetterException("interrupted while republishing " + d.id(), e);
    } catch (RuntimeException e) {
      throw new DeadLetterException("could not republish " + d.id() + " to " + to + ": " + e, e);
    }
  }

  private KafkaProducer<byte[], byte[]> producer() {
    if (producer == null) {
      Map<String, Object> props = new HashMap<>(common);
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeout.toMillis());
      props.put(ProducerConfig.CLIENT_ID_CONFIG, "idem-dead-letters-replay-" + topic);
      producer = new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }
    return producer;
  }

  /** Commits the partition's offset past the records removed (or settled before) in order. */
  private void commitPrefix(Scan scan, int partition, Set<String> done, Map<Integer, Long> committed) {
    long offset = required(scan.start, partition);
    boolean all = true;
    for (ConsumerRecord<byte[], byte[]> r : scan.byPartition.getOrDefault(partition, List.of())) {
      if (!done.contains(id(r))) {
        all = false;
        break;
      }
      offset = r.offset() + 1;
    }
    if (all && scan.complete) {
      offset = Math.max(offset, required(scan.end, partition)); // past transaction markers, if any
    }
    if (offset > required(committed, partition)) {
      consumer.commitSync(Map.of(new TopicPartition(topic, partition), new OffsetAndMetadata(offset)), timeout);
      committed.put(partition, offset);
    }
  }

  private Scan scan(int max) {
    List<TopicPartition> partitions = partitions();
    consumer.assign(partitions);
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(partitions), timeout);
    Map<TopicPartition, Long> beginning = consumer.beginningOffsets(partitions, timeout);
    Map<TopicPartition, Long> end = consumer.endOffsets(partitions, timeout);
    Scan scan = new Scan();
    for (TopicPartition tp : partitions) {
      OffsetAndMetadata c = committed.get(tp);
      long start = Math.max(c == null ? 0 : c.offset(), required(beginning, tp));
      consumer.seek(tp, start);
      scan.start.put(tp.partition(), start);
      scan.end.put(tp.partition(), required(end, tp));
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    int read = 0;
    while (read < max && !reachedEnd(partitions, end)) {
      if (System.nanoTime() > deadline) {
        throw new DeadLetterException("could not read dead-letter topic " + topic + " to its end within " + timeout);
      }
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(POLL)) {
        if (r.offset() < required(end, new TopicPartition(r.topic(), r.partition())) && read < max) {
          scan.byPartition.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(r);
          read++;
        }
      }
    }
    scan.complete = read < max;
    scan.byPartition.values().forEach(list -> list.sort(Comparator.comparingLong(ConsumerRecord::offset)));
    scan.byPartition.keySet().stream().sorted().forEach(p -> scan.records.addAll(scan.byPartition.get(p)));
    List<String> ids = scan.records.stream().map(KafkaDeadLetters::id).toList();
    scan.settled.addAll(ids.isEmpty() ? Set.of() : settled.apply(ids));
    return scan;
  }

  private boolean reachedEnd(List<TopicPartition> partitions, Map<TopicPartition, Long> end) {
    for (TopicPartition tp : partitions) {
      if (consumer.position(tp, timeout) < required(end, tp)) {
        return false;
      }
    }
    return true;
  }

  private List<TopicPartition> partitions() {
    TopicDescription description;
    try {
      description = admin.describeTopics(List.of(topic)).allTopicNames().get(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .get(topic);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        throw new DeadLetterException("dead-letter topic '" + topic + "' does not exist");
      }
      throw new DeadLetterException("could not describe dead-letter topic '" + topic + "': " + e.getCause(), e);
    } catch (TimeoutException e) {
      throw new DeadLetterException("Kafka did not answer within " + timeout + " (bootstrap "
          + common.get(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG) + ")", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeadLetterException("interrupted while describing " + topic, e);
    }
    if (description == null) {
      throw new DeadLetterException("dead-letter topic '" + topic + "' does not exist");
    }
    List<TopicPartition> out = new ArrayList<>();
    description.partitions().forEach(p -> out.add(new TopicPartition(topic, p.partition())));
    return out;
  }

  /** The map's value for a key the code put there (the partitions it asked Kafka about). */
  private static <K, V> V required(Map<K, V> map, K key) {
    V value = map.get(key);
    if (value == null) {
      throw new DeadLetterException("Kafka answered nothing for " + key);
    }
    return value;
  }

  private boolean topicExists(String name) {
    try {
      admin.describeTopics(List.of(name)).allTopicNames().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        return false;
      }
      throw new DeadLetterException("could not check topic '" + name + "': " + e.getCause(), e);
    } catch (TimeoutException e) {
      throw new DeadLetterException("Kafka did not answer within " + timeout + " checking topic '" + name + "'", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeadLetterException("interrupted while checking " + name, e);
    }
  }

  static String id(ConsumerRecord<?, ?> r) {
    return r.topic() + "-" + r.partition() + "@" + r.offset();
  }

  private DeadLetter deadLetter(ConsumerRecord<byte[], byte[]> r) {
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header h : r.headers()) {
      String text = h.value() == null ? null : Utf8.decodeStrict(h.value());
      if (text != null) {
        headers.put(h.key(), text); // the last of a repeated header wins
      }
    }
    return new DeadLetter(id(r), "kafka", topic, headers.get(DeadLetterHeaders.ORIGINAL_TOPIC), headers,
        r.value() == null ? new byte[0] : r.value(), r.key(),
        r.timestamp() >= 0 ? Instant.ofEpochMilli(r.timestamp()) : null,
        DeadLetterHeaders.reason(headers::get), DeadLetterHeaders.replayCount(headers::get));
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close(Duration.ofSeconds(5));
    }
    consumer.close(Duration.ofSeconds(5));
    admin.close(Duration.ofSeconds(5));
  }

  /** What one scan read. */
  private static final class Scan {
    final Map<Integer, Long> start = new HashMap<>();
    final Map<Integer, Long> end = new HashMap<>();
    final Map<Integer, List<ConsumerRecord<byte[], byte[]>>> byPartition = new HashMap<>();
    final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
    final Set<String> settled = new HashSet<>();
    boolean complete;
  }

  /** Builder of {@link KafkaDeadLetters}. Not thread-safe. */
  public static final class Builder {
    private final String bootstrapServers;
    private final String topic;
    private String groupId = DEFAULT_GROUP_ID;
    private @Nullable String target;
    private Duration timeout = DEFAULT_TIMEOUT;
    private final Map<String, Object> properties = new HashMap<>();

    private Builder(String bootstrapServers, String topic) {
      this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.topic = Objects.requireNonNull(topic, "deadLetterTopic");
    }

    /** The tool's consumer group on the dead-letter topic; default {@value #DEFAULT_GROUP_ID}. */
    public Builder groupId(String value) {
      this.groupId = Objects.requireNonNull(value, "groupId");
      return this;
    }

    /** Replays to this topic instead of each record's {@code idem-original-topic}. */
    public Builder target(@Nullable String value) {
      this.target = value;
      return this;
    }

    /** Bound of each broker call (reads, the acknowledgement of a copy); default 30 s. */
    public Builder timeout(Duration value) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("timeout must be positive, but was " + value);
      }
      this.timeout = value;
      return this;
    }

    /** Client properties for all three clients (security, SASL, …), e.g. from a properties file. */
    public Builder properties(Properties value) {
      value.forEach((k, v) -> properties.put(String.valueOf(k), v));
      return this;
    }

    public KafkaDeadLetters build() {
      return new KafkaDeadLetters(this);
    }
  }
}
