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
 *       (Idem's default) replays the whole log. So the horizon is the topic's {@code
 *       retention.ms};
 *   <li>unbounded when {@code retention.ms} is -1 or {@code cleanup.policy} includes {@code
 *       compact} (a compacted topic keeps the last record of each key forever): a replay can
 *       bring back a record of any age.
 * </ul>
 *
 * <p>{@code offsets.retention.minutes} (read from one broker) is reported in the basis, since it
 * says how long a stopped group keeps its place before such a replay. A replay the user starts
 * (a reset to an earlier offset, a new group) is not a horizon Kafka knows of: see docs/STORE.md.
 *
 * <p>Thread-safe; {@link #read()} makes two Admin round trips.
 */
public final class KafkaRedeliveryHorizon implements RedeliveryHorizon {
  /** Default time {@link #read()} waits for the broker: 30 seconds. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

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
      long retentionMs = Long.parseLong(value(config, TopicConfig.RETENTION_MS_CONFIG, "604800000"));
      String cleanup = value(config, TopicConfig.CLEANUP_POLICY_CONFIG, "delete");
      String offsets = offsetsRetention(client);
      String basis = "retention.ms=" + retentionMs + ", cleanup.policy=" + cleanup
          + ", offsets.retention.minutes=" + offsets;
      if (retentionMs < 0 || cleanup.contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
        return Horizon.unbounded(source, basis);
      }
      return Horizon.bounded(source, Duration.ofMillis(retentionMs), basis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading the configuration of " + source, e);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("could not read the configuration of " + source + ": "
          + (e.getCause() != null ? e.getCause() : e), e);
    }
  }

  /** The broker's {@code offsets.retention.minutes}, or "unknown" when no broker would say. */
  private String offsetsRetention(Admin client) throws InterruptedException, ExecutionException, TimeoutException {
    for (Node node : client.describeCluster().nodes().get(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, node.idString());
      Config config = client.describeConfigs(List.of(broker)).all()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(broker);
      return value(config, "offsets.retention.minutes", "unknown");
    }
    return "unknown";
  }

  private static String value(Config config, String name, String fallback) {
    ConfigEntry entry = config.get(name);
    return entry == null || entry.value() == null ? fallback : entry.value();
  }

  @Override
  public String toString() {
    return "KafkaRedeliveryHorizon[" + topic + "]";
  }
}
