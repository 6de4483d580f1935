package io.idem.deadletters;

import io.idem.deadletters.spi.DeadLetterDestination;
import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.DeliveryMode;
import jakarta.jms.InvalidDestinationException;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import jakarta.jms.TemporaryQueue;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A JMS dead-letter queue (tested on ActiveMQ Artemis), as {@code idem-jms} fills it.
 *
 * <ul>
 *   <li>{@link #browse} uses a {@link QueueBrowser}: nothing is received, no delivery is counted.
 *   <li>A replay sends the copy to the dead letter's {@code idem_original_queue} (or the {@link
 *       Builder#target(String) target}) and receives the dead letter (by a {@code JMSMessageID}
 *       selector) in one transacted session, and commits both together: the copy and the removal
 *       are one commit, so there is no moment with both or neither. A copy that is kept ({@link
 *       ReplayOptions#keep()}) is committed alone.
 *   <li>On Artemis the queues are checked through its management address ({@code
 *       broker.getQueueNames} over plain JMS), so that a missing queue is reported instead of
 *       being created on first use; another provider is not asked.
 * </ul>
 *
 * <p>Only bytes and text messages can be republished (as {@code idem-jms} consumes them). A
 * connection of its own, closed by {@link #close()}. Not thread-safe. Needs {@code jakarta.jms-api}
 * and a provider.
 */
public final class JmsDeadLetters implements DeadLetterDestination {

  /** Default {@link Builder#receiveTimeout(Duration)}: 10 seconds. */
  public static final Duration DEFAULT_RECEIVE_TIMEOUT = Duration.ofSeconds(10);

  private static final String ARTEMIS_MANAGEMENT = "activemq.management";
  private static final Set<String> PROVIDER_PROPERTIES = Set.of("_AMQ_DUPL_ID");

  private final String queue;
  private final @Nullable String target;
  private final Duration receiveTimeout;
  private final Connection connection;
  private boolean checked;

  private JmsDeadLetters(Builder b) {
    this.queue = b.queue;
    this.target = b.target;
    this.receiveTimeout = b.receiveTimeout;
    try {
      this.connection = b.user == null ? b.factory.createConnection() : b.factory.createConnection(b.user, b.password);
      connection.start();
    } catch (JMSException e) {
      throw new DeadLetterException("could not connect to the JMS broker: " + e, e);
    }
  }

  /** The dead-letter queue {@code deadLetterQueue}, on a connection from {@code factory}. */
  public static Builder builder(ConnectionFactory factory, String deadLetterQueue) {
    return new Builder(factory, deadLetterQueue);
  }

  @Override
  public String broker() {
    return "jms";
  }

  @Override
  public String name() {
    return queue;
  }

  @Override
  public List<DeadLetter> browse(int max) {
    List<DeadLetter> out = new ArrayList<>();
    for (Message m : browseMessages(max)) {
      out.add(deadLetter(m));
    }
    return out;
  }

  @Override
  public void process(int max, Work work) {
    List<Message> messages = browseMessages(max);
    Session session;
    try {
      session = connection.createSession(true, Session.SESSION_TRANSACTED);
    } catch (JMSException e) {
      throw new DeadLetterException("could not open a transacted session: " + e, e);
    }
    try (MessageProducer producer = session.createProducer(null)) {
      for (Message m : messages) {
        DeadLetter d = deadLetter(m);
        boolean[] pending = {false};
        Held held = new Held() {
          @Override
          public DeadLetter deadLetter() {
            return d;
          }

          @Override
          public void republish(String to, Map<String, String> headers) {
            try {
              Message copy = copy(session, m, headers);
              producer.send(session.createQueue(to), copy, DeliveryMode.PERSISTENT, priority(m), Message.DEFAULT_TIME_TO_LIVE);
              pending[0] = true;
            } catch (JMSException e) {
              throw new DeadLetterException("could not send the copy of " + d.id() + " to " + to + ": " + e, e);
            }
          }

          @Override
          public void remove() {
            try (MessageConsumer consumer = session.createConsumer(session.createQueue(queue),
                "JMSMessageID = '" + d.id().replace("'", "''") + "'")) {
              Message taken = consumer.receive(receiveTimeout.toMillis());
              if (taken == null) {
                throw new DeadLetterException("dead letter " + d.id() + " is no longer in " + queue
                    + " (taken by someone else?): nothing republished");
              }
              session.commit(); // the copy, if any, and the removal together
              pending[0] = false;
            } catch (JMSException e) {
              throw new DeadLetterException("could not remove dead letter " + d.id() + " (it stays, with no copy): " + e, e);
            }
          }
        };
        try {
          work.accept(held);
          if (pending[0]) {
            session.commit(); // a copy kept beside its dead letter
          }
        } catch (Exception e) {
          rollback(session);
        }
      }
    } catch (JMSException e) {
      throw new DeadLetterException("JMS session failed on " + queue + ": " + e, e);
    } finally {
      try {
        session.close();
      } catch (JMSException ignored) {
        // closing
      }
    }
  }

  private static void rollback(Session session) {
    try {
      session.rollback();
    } catch (JMSException ignored) {
      // the broker rolls back what the session left open
    }
  }

  @Override
  public String target(DeadLetter deadLetter) {
    String to = target != null ? target : deadLetter.source();
    if (to == null) {
      throw new DeadLetterException("dead letter " + deadLetter.id() + " has no "
          + DeadLetterHeaders.jmsName(DeadLetterHeaders.ORIGINAL_QUEUE) + " property, so its source queue is unknown:"
          + " give the queue to replay to (--to)");
    }
    Boolean exists = artemisQueueExists(to);
    if (Boolean.FALSE.equals(exists)) {
      throw new DeadLetterException("the queue '" + to + "' to replay dead letter " + deadLetter.id() + " to does not"
          + " exist (deleted?): nothing republished, the dead letter stays");
    }
    return to;
  }

  private List<Message> browseMessages(int max) {
    if (!checked) {
      if (Boolean.FALSE.equals(artemisQueueExists(queue))) {
        throw new DeadLetterException("dead-letter queue '" + queue + "' does not exist");
      }
      checked = true;
    }
    List<Message> out = new ArrayList<>();
    try (Session s = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        QueueBrowser browser = s.createBrowser(s.createQueue(queue))) {
      Enumeration<?> e = browser.getEnumeration();
      while (e.hasMoreElements() && out.size() < max) {
        out.add((Message) e.nextElement());
      }
    } catch (InvalidDestinationException e) {
      throw new DeadLetterException("dead-letter queue '" + queue + "' does not exist: " + e.getMessage(), e);
    } catch (JMSException e) {
      throw new DeadLetterException("could not browse dead-letter queue '" + queue + "': " + e, e);
    }
    return out;
  }

  /**
   * Whether Artemis has a queue {@code name} ({@code broker.getQueueNames} on its management
   * address); {@code null} when the broker does not answer that (another provider, no permission).
   */
  private @Nullable Boolean artemisQueueExists(String name) {
    try (Session s = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
      TemporaryQueue replies = s.createTemporaryQueue();
      TextMessage request = s.createTextMessage("[]");
      request.setStringProperty("_AMQ_ResourceName", "broker");
      request.setStringProperty("_AMQ_OperationName", "getQueueNames");
      request.setJMSReplyTo(replies);
      try (MessageConsumer answers = s.createConsumer(replies);
          MessageProducer producer = s.createProducer(s.createQueue(ARTEMIS_MANAGEMENT))) {
        producer.send(request);
        Message reply = answers.receive(5_000);
        if (reply == null || !Boolean.TRUE.equals(reply.getObjectProperty("_AMQ_OperationSucceeded"))
            || !(reply instanceof TextMessage text) || text.getText() == null) {
          return null;
        }
        return text.getText().contains("\"" + name.replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
      }
    } catch (JMSException | RuntimeException e) {
      return null;
    }
  }

  private static Message copy(Session session, Message m, Map<String, String> added) throws JMSException {
    Message copy;
    if (m instanceof BytesMessage bytes) {
      BytesMessage b = session.createBytesMessage();
      byte[] body = bytes.getBody(byte[].class);
      if (body != null) {
        b.writeBytes(body);
      }
      copy = b;
    } else if (m instanceof TextMessage text) {
      copy = session.createTextMessage(text.getText());
    } else {
      throw new DeadLetterException("dead letter " + m.getJMSMessageID() + " is a " + m.getClass().getSimpleName()
          + ": only bytes and text messages are replayed");
    }
    for (Enumeration<?> names = m.getPropertyNames(); names.hasMoreElements(); ) {
      String name = (String) names.nextElement();
      if (name.startsWith("JMSX") || name.startsWith("JMS_") || PROVIDER_PROPERTIES.contains(name)
          || DeadLetterHeaders.DEAD_LETTER_ONLY.stream().map(DeadLetterHeaders::jmsName).anyMatch(name::equals)) {
        continue;
      }
      Object value = m.getObjectProperty(name);
      if (value != null) {
        copy.setObjectProperty(name, value);
      }
    }
    copy.setJMSCorrelationID(m.getJMSCorrelationID());
    copy.setJMSType(m.getJMSType());
    for (Map.Entry<String, String> h : added.entrySet()) {
      copy.setStringProperty(DeadLetterHeaders.jmsName(h.getKey()), h.getValue());
    }
    return copy;
  }

  private static int priority(Message m) throws JMSException {
    int p = m.getJMSPriority();
    return p < 0 || p > 9 ? Message.DEFAULT_PRIORITY : p;
  }

  private DeadLetter deadLetter(Message m) {
    try {
      Map<String, String> headers = new LinkedHashMap<>();
      for (Enumeration<?> names = m.getPropertyNames(); names.hasMoreElements(); ) {
        String name = (String) names.nextElement();
        Object value = m.getObjectProperty(name);
        if (value instanceof String || value instanceof Number || value instanceof Boolean) {
          headers.put(name, value.toString());
        }
      }
      byte[] payload;
      if (m instanceof BytesMessage b) {
        byte[] body = b.getBody(byte[].class);
        payload = body == null ? new byte[0] : body;
      } else if (m instanceof TextMessage t) {
        payload = t.getText() == null ? new byte[0] : t.getText().getBytes(StandardCharsets.UTF_8);
      } else {
        payload = new byte[0];
      }
      java.util.function.Function<String, String> idem = name -> headers.get(DeadLetterHeaders.jmsName(name));
      long ts = m.getJMSTimestamp();
      return new DeadLetter(Objects.requireNonNullElse(m.getJMSMessageID(), "?"), "jms", queue,
          idem.apply(DeadLetterHeaders.ORIGINAL_QUEUE), headers, payload, null, ts > 0 ? Instant.ofEpochMilli(ts) : null,
          DeadLetterHeaders.reason(idem::apply), DeadLetterHeaders.replayCount(idem::apply));
    } catch (JMSException e) {
      throw new DeadLetterException("could not read a message of " + queue + ": " + e, e);
    }
  }

  @Override
  public void close() {
    try {
      connection.close();
    } catch (JMSException ignored) {
      // closing
    }
  }

  /** Builder of {@link JmsDeadLetters}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory;
    private final String queue;
    private @Nullable String target;
    private @Nullable String user;
    private @Nullable String password;
    private Duration receiveTimeout = DEFAULT_RECEIVE_TIMEOUT;

    private Builder(ConnectionFactory factory, String queue) {
      this.factory = Objects.requireNonNull(factory, "factory");
      this.queue = Objects.requireNonNull(queue, "deadLetterQueue");
    }

    /** Replays to this queue instead of each dead letter's {@code idem_original_queue}. */
    public Builder target(@Nullable String value) {
      this.target = value;
      return this;
    }

    /** The user and password of the connection; default the factory's. */
    public Builder credentials(@Nullable String user, @Nullable String password) {
      this.user = user;
      this.password = password;
      return this;
    }

    /** How long the receive of a browsed dead letter may take; default 10 s. */
    public Builder receiveTimeout(Duration value) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("receiveTimeout must be positive, but was " + value);
      }
      this.receiveTimeout = value;
      return this;
    }

    /** @throws DeadLetterException when the broker cannot be reached */
    public JmsDeadLetters build() {
      return new JmsDeadLetters(this);
    }
  }
}
