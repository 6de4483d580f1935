package io.idem.jms;

import io.idem.IdempotencyException;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.QueueBrowser;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TemporaryQueue;
import jakarta.jms.TextMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the broker does to a message of the consumed queue on its own: after how many deliveries it
 * stops redelivering ({@code max-delivery-attempts}), where it moves the message then, and how long
 * it waits before a redelivery. Read once by {@link JmsIdempotentConsumer#start()}: declared in
 * {@link JmsConsumerConfig} ({@link JmsConsumerConfig#brokerMaxDeliveryAttempts()}), or asked of
 * ActiveMQ Artemis through its management address when the connection factory is Artemis's. The
 * JMS API itself has no way to ask. Immutable.
 *
 * @param maxDeliveryAttempts deliveries after which the broker stops redelivering, or
 *     {@link JmsConsumerConfig#BROKER_UNLIMITED} when it redelivers forever
 * @param deadLetterAddress where the broker moves a message at its limit, or {@code null} when it
 *     drops it
 * @param deadLetterStored whether a message sent to {@code deadLetterAddress} is kept (a queue is
 *     bound to it, or the broker creates one)
 * @param redeliveryDelay the broker's delay before the first redelivery (Artemis
 *     {@code redelivery-delay}); zero when unknown or none
 * @param redeliveryMultiplier Artemis {@code redelivery-delay-multiplier}
 * @param maxRedeliveryDelay Artemis {@code max-redelivery-delay}
 * @param source where these values come from, for messages
 */
record JmsBrokerLimits(
    int maxDeliveryAttempts,
    @Nullable String deadLetterAddress,
    boolean deadLetterStored,
    Duration redeliveryDelay,
    double redeliveryMultiplier,
    Duration maxRedeliveryDelay,
    String source) {

  /** Artemis' default management address. */
  static final String ARTEMIS_MANAGEMENT_ADDRESS = "activemq.management";
  /** How long a management request waits for its answer. */
  static final Duration MANAGEMENT_TIMEOUT = Duration.ofSeconds(10);
  /** Artemis' default {@code max-delivery-attempts} when no address setting names one. */
  static final int ARTEMIS_DEFAULT_MAX_DELIVERY_ATTEMPTS = 10;

  /** Whether the broker stops redelivering at some point. */
  boolean limited() {
    return maxDeliveryAttempts > 0;
  }

  /**
   * The broker's own delay before the delivery that follows {@code failedDelivery} (Artemis:
   * {@code redelivery-delay * multiplier^(deliveryCount - 1)}, capped at {@code max-redelivery-delay}).
   */
  Duration brokerDelayAfter(int failedDelivery) {
    if (redeliveryDelay.isZero()) {
      return Duration.ZERO;
    }
    double millis = redeliveryDelay.toMillis() * Math.pow(redeliveryMultiplier, Math.max(0, failedDelivery - 1));
    long capped = maxRedeliveryDelay.isZero() ? (long) millis : (long) Math.min(millis, maxRedeliveryDelay.toMillis());
    return Duration.ofMillis(Math.max(0, capped));
  }

  /**
   * The limits for {@code config}: the declared ones, else Artemis' address settings.
   *
   * @throws IdempotencyException when neither is available (the message names the setting to
   *     declare), or a management request failed
   */
  static JmsBrokerLimits of(JmsConsumerConfig config) {
    Integer declared = config.brokerMaxDeliveryAttempts();
    if (declared != null) {
      String dlq = config.brokerDeadLetterQueue();
      return new JmsBrokerLimits(declared, dlq, dlq != null && queueExists(config, dlq),
          Duration.ZERO, 1.0, Duration.ZERO, "declared in JmsConsumerConfig");
    }
    if (!isArtemis(config)) {
      throw new IdempotencyException("cannot tell how often the broker behind "
          + config.connectionFactory().getClass().getName() + " redelivers a message of queue '"
          + config.queue() + "' before it stops: only ActiveMQ Artemis can be asked. Declare the"
          + " broker's limit with JmsConsumerConfig.Builder.brokerMaxDeliveryAttempts(n) (its"
          + " redelivery limit, or JmsConsumerConfig.BROKER_UNLIMITED when it has none) and"
          + " brokerDeadLetterQueue(name) (where it moves a message at that limit), so that Idem"
          + " dead-letters before the broker's limit acts and refuses to start where the broker"
          + " would drop a message.");
    }
    return artemis(config);
  }

  /** Whether the factory is ActiveMQ Artemis' (its management address can then be asked). */
  static boolean isArtemis(JmsConsumerConfig config) {
    for (Class<?> c = config.connectionFactory().getClass(); c != null; c = c.getSuperclass()) {
      if (c.getName().startsWith("org.apache.activemq.artemis.")) {
        return true;
      }
    }
    return false;
  }

  private static JmsBrokerLimits artemis(JmsConsumerConfig config) {
    String address = config.queue();
    Object settings;
    try {
      settings = manage(config, "broker", "getAddressSettingsAsJSON", address);
    } catch (ManagementFailure e) {
      throw new IdempotencyException(e.getMessage() + ": cannot read the redelivery limit of queue '"
          + address + "'. Allow this user to manage the broker, or declare the limit with"
          + " JmsConsumerConfig.Builder.brokerMaxDeliveryAttempts(n) and brokerDeadLetterQueue(name).", e);
    }
    Map<?, ?> json = settings instanceof String s && MiniJson.parse(s) instanceof Map<?, ?> m ? m : Map.of();
    int max = json.get("maxDeliveryAttempts") instanceof Number n ? n.intValue() : ARTEMIS_DEFAULT_MAX_DELIVERY_ATTEMPTS;
    String dla = json.get("deadLetterAddress") instanceof String s && !s.isBlank() ? s : null;
    boolean autoCreate = Boolean.TRUE.equals(json.get("autoCreateDeadLetterResources"));
    boolean stored = dla != null && (autoCreate || hasQueues(config, dla));
    long delay = json.get("redeliveryDelay") instanceof Number n ? n.longValue() : 0;
    double multiplier = json.get("redeliveryMultiplier") instanceof Number n ? n.doubleValue() : 1.0;
    long maxDelay = json.get("maxRedeliveryDelay") instanceof Number n ? n.longValue() : delay * 10;
    return new JmsBrokerLimits(max <= 0 ? JmsConsumerConfig.BROKER_UNLIMITED : max, dla, stored,
        Duration.ofMillis(Math.max(0, delay)), multiplier, Duration.ofMillis(Math.max(0, maxDelay)),
        "ActiveMQ Artemis address settings of '" + address + "'");
  }

  private static boolean hasQueues(JmsConsumerConfig config, String address) {
    try {
      Object names = manage(config, "address." + address, "getQueueNames");
      return names instanceof List<?> list && !list.isEmpty();
    } catch (ManagementFailure e) {
      return false; // AMQ229067: no such address, so no queue either
    }
  }

  /**
   * Refuses a configuration in which the broker could drop a message: it stops redelivering at
   * some point and has nowhere to keep the message then.
   *
   * @throws IdempotencyException naming the setting, its value and the fix
   */
  void requireNothingDropped(JmsConsumerConfig config, int pipelineMaxAttempts) {
    if (!limited()) {
      return;
    }
    String where = source + " (queue '" + config.queue() + "')";
    if (deadLetterAddress == null) {
      throw new IdempotencyException(where + ": max-delivery-attempts is " + maxDeliveryAttempts
          + " and no dead-letter-address is set, so the broker DROPS a message after "
          + maxDeliveryAttempts + " deliveries (Artemis logs AMQ222148) when Idem could not decide"
          + " on it (a JVM crash, an unreadable message, a worker error; Idem itself dead-letters"
          + " failing handlers at attempt " + Math.min(maxDeliveryAttempts, pipelineMaxAttempts)
          + "). Set dead-letter-address for '" + config.queue() + "' to '"
          + config.deadLetterQueue() + "' (Idem's dead-letter queue), or max-delivery-attempts to -1"
          + " (declared brokers: JmsConsumerConfig.Builder.brokerDeadLetterQueue).");
    }
    if (!deadLetterStored) {
      throw new IdempotencyException(where + ": max-delivery-attempts is " + maxDeliveryAttempts
          + " and the dead-letter-address '" + deadLetterAddress + "' has no queue (and"
          + " auto-create-dead-letter-resources is off), so the broker DROPS a message after "
          + maxDeliveryAttempts + " deliveries (Artemis logs AMQ222148). Create a queue on address '"
          + deadLetterAddress + "', or set auto-create-dead-letter-resources to true.");
    }
  }

  @Override
  public String toString() {
    return "max-delivery-attempts " + (limited() ? Integer.toString(maxDeliveryAttempts) : "unlimited")
        + ", dead-letter-address " + deadLetterAddress + ", redelivery-delay " + redeliveryDelay.toMillis()
        + " ms (" + source + ")";
  }

  /** Whether {@code queue} can be browsed (the provider knows it). */
  static boolean queueExists(JmsConsumerConfig config, String queue) {
    try (Connection c = config.connectionFactory().createConnection()) {
      Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
      QueueBrowser browser = s.createBrowser(s.createQueue(queue));
      browser.getEnumeration().hasMoreElements();
      browser.close();
      return true;
    } catch (jakarta.jms.InvalidDestinationException e) {
      return false;
    } catch (JMSException e) {
      if (saysMissing(e)) {
        return false;
      }
      throw new IdempotencyException("could not check queue '" + queue + "' for " + config.queue() + ": " + e, e);
    }
  }

  static boolean saysMissing(JMSException e) {
    String text = String.valueOf(e.getMessage()).toLowerCase(Locale.ROOT);
    return text.contains("does not exist") || text.contains("no queue") || text.contains("not exist")
        || text.contains("not found");
  }

  /** A management operation the broker answered with a failure. */
  static final class ManagementFailure extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    ManagementFailure(String message) {
      super(message);
    }
  }

  /**
   * One Artemis management request over plain JMS: a {@code TextMessage} to
   * {@value #ARTEMIS_MANAGEMENT_ADDRESS} carrying {@code _AMQ_ResourceName},
   * {@code _AMQ_OperationName} and the parameters as a JSON array; the reply's text is a JSON array
   * holding the result.
   */
  private static @Nullable Object manage(JmsConsumerConfig config, String resource, String operation, String... args) {
    StringBuilder params = new StringBuilder("[");
    for (int i = 0; i < args.length; i++) {
      params.append(i == 0 ? "" : ",").append(MiniJson.quote(args[i]));
    }
    params.append(']');
    try (Connection c = config.connectionFactory().createConnection()) {
      c.start();
      Session session = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
      TemporaryQueue replies = session.createTemporaryQueue();
      TextMessage request = session.createTextMessage(params.toString());
      request.setStringProperty("_AMQ_ResourceName", resource);
      request.setStringProperty("_AMQ_OperationName", operation);
      request.setJMSReplyTo(replies);
      try (MessageConsumer answers = session.createConsumer(replies);
          MessageProducer producer = session.createProducer(session.createQueue(ARTEMIS_MANAGEMENT_ADDRESS))) {
        producer.send(request);
        Message reply = answers.receive(MANAGEMENT_TIMEOUT.toMillis());
        if (reply == null) {
          throw new JMSException("no answer within " + MANAGEMENT_TIMEOUT.toSeconds() + " s (is the"
              + " broker's management-address '" + ARTEMIS_MANAGEMENT_ADDRESS + "'?)");
        }
        return result(reply, resource, operation);
      }
    } catch (ClassCastException | JMSException | IllegalArgumentException e) {
      throw new IdempotencyException("could not read the broker's redelivery limit for queue '"
          + config.queue() + "' from ActiveMQ Artemis management (" + resource + "." + operation
          + " on " + ARTEMIS_MANAGEMENT_ADDRESS + "): " + e + ". Allow this user to send management"
          + " messages, or declare the limit with JmsConsumerConfig.Builder.brokerMaxDeliveryAttempts(n)"
          + " and brokerDeadLetterQueue(name).", e);
    }
  }

  /** The result a management reply carries (the first element of its JSON array body). */
  private static @Nullable Object result(Message reply, String resource, String operation) throws JMSException {
    Object body = reply instanceof TextMessage t && t.getText() != null ? MiniJson.parse(t.getText()) : null;
    Object result = body instanceof List<?> list && !list.isEmpty() ? list.get(0) : body;
    if (!Boolean.TRUE.equals(reply.getObjectProperty("_AMQ_OperationSucceeded"))) {
      throw new ManagementFailure("Artemis management " + resource + "." + operation + " failed: " + result);
    }
    return result;
  }

  /** The little JSON the management replies use: objects, arrays, strings, numbers, booleans, null. */
  static final class MiniJson {
    private final String s;
    private int i;

    private MiniJson(String s) {
      this.s = s;
    }

    /** @throws IllegalArgumentException when {@code text} is not JSON */
    static @Nullable Object parse(String text) {
      MiniJson p = new MiniJson(text);
      Object value = p.value();
      p.space();
      if (p.i != text.length()) {
        throw p.error("trailing text");
      }
      return value;
    }

    static String quote(String value) {
      StringBuilder b = new StringBuilder("\"");
      for (char c : value.toCharArray()) {
        if (c == '"' || c == '\\') {
          b.append('\\').append(c);
        } else if (c < 0x20) {
          b.append(String.format("\\u%04x", (int) c));
        } else {
          b.append(c);
        }
      }
      return b.append('"').toString();
    }

    private @Nullable Object value() {
      space();
      if (i >= s.length()) {
        throw error("unexpected end");
      }
      char c = s.charAt(i);
      switch (c) {
        case '{' -> {
          i++;
          Map<String, Object> map = new LinkedHashMap<>();
          space();
          if (peek('}')) {
            return map;
          }
          do {
            space();
            String key = string();
            space();
            expect(':');
            map.put(key, value());
            space();
          } while (peek(','));
          expect('}');
          return map;
        }
        case '[' -> {
          i++;
          List<Object> list = new ArrayList<>();
          space();
          if (peek(']')) {
            return list;
          }
          do {
            list.add(value());
            space();
          } while (peek(','));
          expect(']');
          return list;
        }
        case '"' -> {
          return string();
        }
        default -> {
          for (String word : new String[] {"true", "false", "null"}) {
            if (s.startsWith(word, i)) {
              i += word.length();
              return word.equals("null") ? null : Boolean.valueOf(word);
            }
          }
          int start = i;
          while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
            i++;
          }
          if (start == i) {
            throw error("unexpected '" + c + "'");
          }
          String number = s.substring(start, i);
          try {
            return number.matches("-?\\d{1,18}") ? (Object) Long.valueOf(number) : (Object) Double.valueOf(number);
          } catch (NumberFormatException e) {
            throw error("bad number " + number);
          }
        }
      }
    }

    private String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (i < s.length()) {
        char c = s.charAt(i++);
        if (c == '"') {
          return b.toString();
        }
        if (c != '\\') {
          b.append(c);
          continue;
        }
        if (i >= s.length()) {
          break;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'n' -> b.append('\n');
          case 't' -> b.append('\t');
          case 'r' -> b.append('\r');
          case 'b' -> b.append('\b');
          case 'f' -> b.append('\f');
          case 'u' -> {
            if (i + 4 > s.length()) {
              throw error("bad escape");
            }
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
          }
          default -> b.append(e);
        }
      }
      throw error("unterminated string");
    }

    private void space() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    private boolean peek(char c) {
      if (i < s.length() && s.charAt(i) == c) {
        i++;
        return true;
      }
      return false;
    }

    private void expect(char c) {
      if (!peek(c)) {
        throw error("expected '" + c + "'");
      }
    }

    private IllegalArgumentException error(String what) {
      return new IllegalArgumentException("not JSON (" + what + " at " + i + "): " + s);
    }
  }
}
