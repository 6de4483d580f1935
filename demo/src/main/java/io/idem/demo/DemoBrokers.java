package io.idem.demo;

import java.util.List;
import java.util.Map;

/** The brokers the demo knows, by name. */
public final class DemoBrokers {
  /** Every broker name {@link #create(String)} accepts. */
  public static final List<String> NAMES = List.of("kafka", "rabbitmq", "sqs", "jms");

  private DemoBrokers() {}

  /** A broker for the parent process, not started yet. */
  public static DemoBroker create(String name) {
    return forConsumer(name, Map.of());
  }

  /**
   * A broker for the parent process, not started yet, at the servers {@code args} name ({@code
   * rabbitmq-uri}); a broker finds its own where {@code args} names none.
   */
  public static DemoBroker create(String name, Map<String, String> args) {
    return forConsumer(name, args);
  }

  /** A broker for the consumer process, connected through {@link DemoBroker#connectionArgs()}. */
  public static DemoBroker forConsumer(String name, Map<String, String> args) {
    switch (name) {
      case "kafka":
        return new KafkaDemoBroker(args);
      case "rabbitmq":
        return new RabbitDemoBroker(args);
      case "sqs":
        return new SqsDemoBroker(args);
      case "jms":
        return new JmsDemoBroker(args);
      default:
        throw new IllegalArgumentException("--broker must be one of " + NAMES + ", but was '" + name + "'");
    }
  }
}
