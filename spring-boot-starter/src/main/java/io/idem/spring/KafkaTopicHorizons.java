package io.idem.spring;

import io.idem.kafka.KafkaRedeliveryHorizon;
import io.idem.spi.RedeliveryHorizon.Horizon;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * Reads the redelivery horizons of a Kafka listener's topics with idem-kafka's {@link
 * KafkaRedeliveryHorizon}, through an Admin client made from the consumer's own connection settings
 * (bootstrap servers, security): loaded only when idem-kafka is on the classpath.
 */
final class KafkaTopicHorizons {
  private KafkaTopicHorizons() {}

  /** Whether idem-kafka (which reads the horizons) is on the classpath. */
  static boolean available() {
    return org.springframework.util.ClassUtils.isPresent("io.idem.kafka.KafkaRedeliveryHorizon",
        KafkaTopicHorizons.class.getClassLoader());
  }

  /**
   * The horizon of each of {@code topics}; a topic whose horizon could not be read is added to
   * {@code unreadable} with the reason.
   */
  static List<Horizon> read(Map<String, Object> consumerConfig, List<String> topics, List<String> unreadable) {
    Set<String> adminSettings = AdminClientConfig.configNames();
    Map<String, Object> config = new LinkedHashMap<>();
    consumerConfig.forEach((name, value) -> {
      if (adminSettings.contains(name) && !name.equals(AdminClientConfig.CLIENT_ID_CONFIG)) {
        config.put(name, value);
      }
    });
    config.put(AdminClientConfig.CLIENT_ID_CONFIG, "idem-retention-horizons");
    // a broker down at start-up delays start-up by this much per container, not by the client's default minute
    config.putIfAbsent(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
    config.putIfAbsent(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    List<Horizon> horizons = new ArrayList<>();
    try (Admin admin = Admin.create(config)) {
      for (String topic : topics) {
        try {
          horizons.add(KafkaRedeliveryHorizon.of(admin, topic).read());
        } catch (RuntimeException e) {
          unreadable.add("kafka topic " + topic + " (" + e.getMessage() + ")");
        }
      }
    } catch (RuntimeException e) {
      topics.forEach(topic -> unreadable.add("kafka topic " + topic + " (no Admin client: " + e.getMessage() + ")"));
    }
    return horizons;
  }
}
