package io.idem.kafka;

import io.idem.spi.RedeliveryHorizon;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.jspecify.annotations.Nullable;

/**
 * The redelivery horizon of a Kafka topic, read with the Admin client ({@code describeConfigs}):
 *
 * <ul>
 *   <li>a record can be consumed again as long as it is in the log: while its offset is not
 *       committed (a crash before the commit, a rebalance), after an offset reset, or when the
 *       group's committed offsets expired — a group without members longer than the broker's
 *       {@code offsets.retention.minutes} loses them, and with {@code auto.offset.reset=earliest}
 *       (Idem's default) replays the whole log;
 *   <li>a record stays in the log longer than {@code retention.ms}: the broker deletes whole
 *       segments only, a segment only once its newest record is older than {@code retention.ms},
 *       the records of one segment span up to {@code segment.ms} (an append rolls a new segment
 *       once the active one's first record is that old), and the deletion runs every {@code
 *       log.retention.check.interval.ms} (a broker
 *       setting). So the first record of a segment can be read until {@code segment.ms +
 *       retention.ms + log.retention.check.interval.ms} after it was appended, and that sum is the
 *       horizon: with Kafka's defaults 7 days + 7 days + 5 minutes ({@link #horizonOf});
 *   <li>unbounded when {@code retention.ms} is -1 or {@code cleanup.policy} includes {@code
 *       compact} (a compacted topic keeps the last record of each key forever): a replay can
 *       bring back a record of any age.
 * </ul>
 *
 * <p>{@code log.retention.check.interval.ms} is read from one broker; when no broker answers it
 * (an Admin without the DescribeConfigs right on the cluster), Kafka's default {@value
 * #DEFAULT_RETENTION_CHECK_INTERVAL_MS} ms is taken and the basis says so. {@code
 * offsets.retention.minutes} (from the same broker) is reported in the basis, since it says how
 * long a stopped group keeps its place before such a replay. A replay the user starts (a reset to
 * an earlier offset, a new group) is not a horizon Kafka knows of: see docs/STORE.md. The records'
 * timestamps are taken as the time they were appended ({@code CreateTime} set by a producer to a
 * time in the future delays the deletion further; {@code message.timestamp.after.max.ms} bounds
 * that on the broker).
 *
 * <p>Thread-safe; {@link #read()} makes three Admin round trips.
 */
public final class KafkaRedeliveryHorizon implements RedeliveryHorizon {
  /** Default time {@link #read()} waits for the broker: 30 seconds. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
  /** Kafka's default {@code log.retention.check.interval.ms}: 300000 (5 minutes). */
  public static final long DEFAULT_RETENTION_CHECK_INTERVAL_MS = 300_000L;
  /** Kafka's default {@code retention.ms} and {@code segment.ms}: 604800000 (7 days). */
  static final long KAFKA_DEFAULT_RETENTION_MS = 604_800_000L;
  private static final String RETENTION_CHECK_INTERVAL = "log.retention.check.interval.ms";

  private final @Nullable Admin admin;
  private final @Nullable String bootstrapServers;
  private final String topic;
  private final Duration timeout;

  private KafkaRedeliveryHorizon(@Nullable Admin admin, @Nullable String bootstrapServers, String topic,
      Duration timeout) {
    this.admin = admin;
    this.bootstrapServers = bootstrapServers;
    this.topic = Objects.requireNonNull(topic, "topic");
    this.timeout = Objects.requireNonNull(timeout, "timeout");
  }

  /** Reads through the caller's Admin client (not closed here). */
  public static KafkaRedeliveryHorizon of(Admin admin, String topic) {
    return new KafkaRedeliveryHorizon(Objects.requireNonNull(admin, "admin"), null, topic, DEFAULT_TIMEOUT);
  }

  /** Reads through an Admin client of its own, opened and closed by each {@link #read()}. */
  public static KafkaRedeliveryHorizon of(String bootstrapServers, String topic) {
    return new KafkaRedeliveryHorizon(null, Objects.requireNonNull(bootstrapServers, "bootstrapServers"),
        topic, DEFAULT_TIMEOUT);
  }

  /**
   * @throws IllegalStateException when the broker did not answer within {@link #DEFAULT_TIMEOUT}
   *     or the topic does not exist
   */
  @Override
  public Horizon read() {
    if (admin != null) {
      return read(admin);
    }
    try (Admin own = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
      return read(own);
    }
  }

  private Horizon read(Admin client) {
    String source = "kafka topic " + topic;
    try {
      ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      Config config = client.describeConfigs(List.of(topicResource)).all()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(topicResource);
      if (config == null) {
        throw new IllegalStateException("the broker answered no configuration for topic " + topic);
      }
      long retentionMs = Long.parseLong(value(config, TopicConfig.RETENTION_MS_CONFIG,
          String.valueOf(KAFKA_DEFAULT_RETENTION_MS)));
      long segmentMs = Long.parseLong(value(config, TopicConfig.SEGMENT_MS_CONFIG,
          String.valueOf(KAFKA_DEFAULT_RETENTION_MS)));
      String cleanup = value(config, TopicConfig.CLEANUP_POLICY_CONFIG, "delete");
      Config brokerConfig = brokerConfig(client);
      String offsets = brokerConfig == null ? "unknown" : value(brokerConfig, "offsets.retention.minutes", "unknown");
      String checkValue = brokerConfig == null ? null : valueOrNull(brokerConfig, RETENTION_CHECK_INTERVAL);
      long checkMs = checkValue == null ? DEFAULT_RETENTION_CHECK_INTERVAL_MS : Long.parseLong(checkValue);
      String basis = "retention.ms=" + retentionMs + ", segment.ms=" + segmentMs + ", "
          + RETENTION_CHECK_INTERVAL + "=" + checkMs + (checkValue == null ? " (not readable: Kafka's default)" : "")
          + ", cleanup.policy=" + cleanup + ", offsets.retention.minutes=" + offsets;
      if (retentionMs < 0 || cleanup.contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
        return Horizon.unbounded(source, basis);
      }
      return Horizon.bounded(source, horizonOf(retentionMs, segmentMs, checkMs),
          basis + "; horizon = retention.ms + segment.ms + " + RETENTION_CHECK_INTERVAL);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading the configuration of " + source, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("could not read the configuration of " + source + ": "
          + (e.getCause() != null ? e.getCause() : e), e);
    }
  }

  /**
   * The longest a record of a topic with finite {@code retentionMs} stays readable: a segment is
   * deleted once its newest record is older than {@code retention.ms}, the active segment's
   * first record waits up to {@code segment.ms} for the segment to roll, and the deletion runs
   * every {@code log.retention.check.interval.ms}.
   *
   * @param retentionMs the topic's {@code retention.ms}, not negative
   * @param segmentMs the topic's {@code segment.ms}, not negative
   * @param checkIntervalMs the broker's {@code log.retention.check.interval.ms}, not negative
   */
  public static Duration horizonOf(long retentionMs, long segmentMs, long checkIntervalMs) {
    if (retentionMs < 0 || segmentMs < 0 || checkIntervalMs < 0) {
      throw new IllegalArgumentException("retention.ms, segment.ms and log.retention.check.interval.ms must not"
          + " be negative, but were " + retentionMs + ", " + segmentMs + ", " + checkIntervalMs);
    }
    return Duration.ofMillis(Math.addExact(Math.addExact(retentionMs, segmentMs), checkIntervalMs));
  }

  /**
   * The configuration of one broker (its {@code offsets.retention.minutes} and {@code
   * log.retention.check.interval.ms}), or null when none would say (no DescribeConfigs right on
   * the cluster, no broker listed).
   */
  private @Nullable Config brokerConfig(Admin client) throws InterruptedException, TimeoutException {
    try {
      for (Node node : client.describeCluster().nodes().get(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
        return client.describeConfigs(List.of(broker)).all()
            .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(broker);
      }
    } catch (ExecutionException e) {
      // e.g. ClusterAuthorizationException: the horizon falls back to Kafka's default check interval
    }
    return null;
  }

  private static String value(Config config, String name, String fallback) {
    String value = valueOrNull(config, name);
    return value == null ? fallback : value;
  }

  private static @Nullable String valueOrNull(Config config, String name) {
    ConfigEntry entry = config.get(name);
    return entry == null ? null : entry.value();
  }

  @Override
  public String toString() {
    return "KafkaRedeliveryHorizon[" + topic + "]";
  }
}
