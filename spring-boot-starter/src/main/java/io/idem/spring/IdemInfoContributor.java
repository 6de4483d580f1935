package io.idem.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;

/**
 * Actuator's {@code /actuator/info} entry {@code idem}: the starter's version, the consumer groups
 * in use, the {@link Idempotent} listener methods (container kind, consumer group) and the
 * consumers of {@code idem.consumers.*} (broker, source, consumer group). Configuration only,
 * read at each call; nothing is asked of the brokers or PostgreSQL (their state is the health
 * indicators'). Registered when Spring Boot Actuator ({@code spring-boot-actuator}) is on the
 * classpath; replace it with a bean named {@code idemInfoContributor}. Thread-safe.
 */
public final class IdemInfoContributor implements InfoContributor {
  /** The starter's version, from the build; {@code unknown} when the resource is missing. */
  public static final String VERSION = readVersion();

  private final IdemProperties properties;
  private final ObjectProvider<IdempotentListenerPostProcessor> listeners;

  public IdemInfoContributor(IdemProperties properties,
      ObjectProvider<IdempotentListenerPostProcessor> listeners) {
    this.properties = Objects.requireNonNull(properties, "properties");
    this.listeners = Objects.requireNonNull(listeners, "listeners");
  }

  @Override
  public void contribute(Info.Builder builder) {
    TreeSet<String> groups = new TreeSet<>();
    Map<String, Object> methods = new TreeMap<>();
    IdempotentListenerPostProcessor postProcessor = listeners.getIfAvailable();
    if (postProcessor != null) {
      postProcessor.listeners().forEach((name, binding) -> {
        groups.add(binding.consumerGroup());
        methods.put(name, Map.of("kind", binding.kind().kind(), "consumerGroup", binding.consumerGroup()));
      });
    }
    Map<String, Object> consumers = new TreeMap<>();
    properties.getConsumers().forEach((name, consumer) -> {
      String group = consumer.getConsumerGroup() != null ? consumer.getConsumerGroup() : name;
      groups.add(group);
      Map<String, Object> details = new LinkedHashMap<>();
      putIfSet(details, "broker",
          consumer.getBroker() == null ? null : consumer.getBroker().name().toLowerCase(Locale.ROOT));
      putIfSet(details, "source", consumer.getSource());
      details.put("consumerGroup", group);
      consumers.put(name, details);
    });
    Map<String, Object> idem = new LinkedHashMap<>();
    idem.put("version", VERSION);
    idem.put("consumerGroups", List.copyOf(groups));
    idem.put("listeners", methods);
    idem.put("consumers", consumers);
    builder.withDetail("idem", idem);
  }

  private static void putIfSet(Map<String, Object> details, String name, @Nullable Object value) {
    if (value != null) {
      details.put(name, value);
    }
  }

  private static String readVersion() {
    try (InputStream in = IdemInfoContributor.class.getResourceAsStream("idem-starter.properties")) {
      if (in == null) {
        return "unknown";
      }
      Properties build = new Properties();
      build.load(in);
      return build.getProperty("version", "unknown");
    } catch (IOException e) {
      throw new UncheckedIOException("could not read idem-starter.properties", e);
    }
  }
}
