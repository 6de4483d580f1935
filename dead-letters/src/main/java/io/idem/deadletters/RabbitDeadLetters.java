package io.idem.deadletters;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.ShutdownSignalException;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.spi.Utf8;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A RabbitMQ dead-letter queue ({@code <queue>.dlq}, as {@code idem-rabbitmq} fills it through
 * {@code <queue>.dlx}), read with {@code basic.get} and manual acknowledgements.
 *
 * <ul>
 *   <li>{@link #browse} fetches the dead letters unacknowledged (each at most once: held ones are
 *       not handed out again) and returns them all with one {@code basic.nack(multiple, requeue)};
 *       nothing is removed. So that returning them can never drop one, a quorum queue must have no
 *       delivery limit that returns count against: before any read the queue is probed by
 *       declaration (RabbitMQ checks a declaration's arguments against the queue's), and reading
 *       is refused on a quorum queue with a delivery limit — on RabbitMQ 4.0 to 4.2 also the
 *       default one of 20 — unless it was declared with {@code x-delivery-limit=-1}, as {@code
 *       idem-rabbitmq}'s topology does on RabbitMQ 4. From 4.3 a {@code basic.nack} with {@code
 *       multiple} is not counted, and 3.x has no default limit (a limit set by policy cannot be
 *       seen by a client: do not set one on a dead-letter queue).
 *   <li>A replay publishes the copy to the default exchange with the source queue as routing key,
 *       {@code mandatory}, on a channel in confirm mode, with a new {@code message-id} (the pipeline
 *       tells a replay from a redelivery by it, and the adapter tracks attempts by it); only once the
 *       broker confirmed it and did not return it is the dead letter acknowledged ({@code
 *       basic.ack}).
 * </ul>
 *
 * <p>The source queue is not on the dead letter: it is {@link Builder#sourceQueue(String)}, by
 * default the dead-letter queue's name without {@value #DEFAULT_SUFFIX}. A connection of its own,
 * closed by {@link #close()}. Not thread-safe. Needs {@code amqp-client}.
 */
public final class RabbitDeadLetters implements DeadLetterDestination {

  /** The dead-letter queue suffix the source queue is derived by: {@value}. */
  public static final String DEFAULT_SUFFIX = ".dlq";

  /** Default {@link Builder#confirmTimeout(Duration)}: 30 seconds. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

  private static final int NOT_FOUND = 404;
  private static final int PRECONDITION_FAILED = 406;
  private static final Set<String> BROKER_HEADERS = Set.of("x-delivery-count", "x-acquired-count", "x-death",
      "x-first-death-exchange", "x-first-death-queue", "x-first-death-reason", "x-last-death-exchange",
      "x-last-death-queue", "x-last-death-reason");

  private final String queue;
  private final @Nullable String source;
  private final @Nullable String target;
  private final Duration confirmTimeout;
  private final Connection connection;
  private final Set<String> existingQueues = new HashSet<>();
  private @Nullable Channel publishing;
  private volatile @Nullable String returned;
  private boolean checked;

  private RabbitDeadLetters(Builder b) {
    this.queue = b.queue;
    this.source = b.sourceQueue != null ? b.sourceQueue
        : b.queue.endsWith(DEFAULT_SUFFIX) ? b.queue.substring(0, b.queue.length() - DEFAULT_SUFFIX.length()) : null;
    this.target = b.target;
    this.confirmTimeout = b.confirmTimeout;
    try {
      this.connection = b.factory.newConnection("idem-dead-letters:" + queue);
    } catch (IOException | TimeoutException e) {
      throw new DeadLetterException("could not connect to RabbitMQ at " + b.factory.getHost() + ":"
          + b.factory.getPort() + ": " + e, e);
    }
  }

  /** The dead-letter queue {@code deadLetterQueue}, on a connection from {@code factory}. */
  public static Builder builder(ConnectionFactory factory, String deadLetterQueue) {
    return new Builder(factory, deadLetterQueue);
  }

  /**
   * The dead-letter queue {@code deadLetterQueue} on the server at {@code uri}
   * ({@code amqp://user:password@host:5672/vhost}).
   *
   * @throws IllegalArgumentException when the URI cannot be used
   */
  public static Builder builder(String uri, String deadLetterQueue) {
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(uri);
    } catch (Exception e) {
      throw new IllegalArgumentException("not a RabbitMQ URI (amqp://user:password@host:5672/vhost): " + e.getMessage(), e);
    }
    factory.setAutomaticRecoveryEnabled(false);
    return new Builder(factory, deadLetterQueue);
  }

  @Override
  public String broker() {
    return "rabbitmq";
  }

  @Override
  public String name() {
    return queue;
  }

  @Override
  public List<DeadLetter> browse(int max) {
    List<DeadLetter> out = new ArrayList<>();
    withFetched(max, fetched -> fetched.forEach(g -> out.add(deadLetter(g))));
    return out;
  }

  @Override
  public void process(int max, Work work) {
    withFetched(max, fetched -> {
      for (GetResponse g : fetched) {
        DeadLetter d = deadLetter(g);
        Held held = new Held() {
          @Override
          public DeadLetter deadLetter() {
            return d;
          }

          @Override
          public void republish(String to, Map<String, String> headers) {
            publish(g, d, to, headers);
          }

          @Override
          public void remove() {
            try {
              Objects.requireNonNull(reading, "no fetch in progress").basicAck(g.getEnvelope().getDeliveryTag(), false);
              acked.add(g.getEnvelope().getDeliveryTag());
            } catch (IOException | RuntimeException e) {
              throw new DeadLetterException("could not acknowledge dead letter " + d.id() + " (it stays): " + e, e);
            }
          }
        };
        try {
          work.accept(held);
        } catch (Exception e) {
          // the caller reports it; the dead letter stays
        }
      }
    });
  }

  @Override
  public String target(DeadLetter deadLetter) {
    String to = target != null ? target : source;
    if (to == null) {
      throw new DeadLetterException("the source queue of dead-letter queue '" + queue + "' is unknown (its name does"
          + " not end in " + DEFAULT_SUFFIX + "): give it (--source)");
    }
    if (!existingQueues.contains(to)) {
      Integer code = attempt(ch -> ch.queueDeclarePassive(to));
      if (code != null) {
        throw new DeadLetterException("the queue '" + to + "' to replay dead letter " + deadLetter.id() + " to "
            + (code == NOT_FOUND ? "does not exist (deleted?)" : "cannot be checked (reply " + code + ")")
            + ": nothing republished, the dead letter stays");
      }
      existingQueues.add(to);
    }
    return to;
  }

  private @Nullable Channel reading;
  private final Set<Long> acked = new HashSet<>();

  /**
   * Fetches up to {@code max} dead letters unacknowledged (all of them first: the dead letters a
   * replay makes meanwhile are not among them), runs {@code work}, returns the rest.
   */
  private void withFetched(int max, java.util.function.Consumer<List<GetResponse>> work) {
    checkReadable();
    List<GetResponse> fetched = new ArrayList<>();
    acked.clear();
    try {
      Channel channel = connection.createChannel();
      reading = channel;
      try {
        while (fetched.size() < max) {
          GetResponse g = channel.basicGet(queue, false);
          if (g == null) {
            break;
          }
          fetched.add(g);
        }
        work.accept(fetched);
      } finally {
        long last = -1;
        for (GetResponse g : fetched) {
          if (!acked.contains(g.getEnvelope().getDeliveryTag())) {
            last = Math.max(last, g.getEnvelope().getDeliveryTag());
          }
        }
        if (last >= 0 && channel.isOpen()) {
          // everything not acknowledged goes back, in one call (RabbitMQ 4.3+ does not count it)
          channel.basicNack(last, true, true);
        }
        if (channel.isOpen()) {
          channel.close();
        }
      }
    } catch (IOException | TimeoutException e) {
      throw new DeadLetterException("could not read dead-letter queue '" + queue + "': " + e, e);
    }
  }

  private void publish(GetResponse g, DeadLetter d, String to, Map<String, String> added) {
    AMQP.BasicProperties original = g.getProps();
    Map<String, Object> headers = new LinkedHashMap<>();
    if (original.getHeaders() != null) {
      original.getHeaders().forEach((name, value) -> {
        if (!DeadLetterHeaders.DEAD_LETTER_ONLY.contains(name) && !BROKER_HEADERS.contains(name)) {
          headers.put(name, value);
        }
      });
    }
    headers.putAll(added);
    String messageId = UUID.randomUUID().toString();
    AMQP.BasicProperties props = original.builder().headers(headers).messageId(messageId).deliveryMode(2)
        .userId(null).build();
    try {
      Channel ch = publishing();
      returned = null;
      ch.basicPublish("", to, true, props, g.getBody());
      ch.waitForConfirmsOrDie(confirmTimeout.toMillis());
      if (messageId.equals(returned)) {
        throw new DeadLetterException("RabbitMQ returned the copy of " + d.id() + " unrouted: queue '" + to
            + "' does not exist (deleted?); the dead letter stays");
      }
    } catch (IOException | TimeoutException | InterruptedException | ShutdownSignalException e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      closePublishing();
      throw new DeadLetterException("RabbitMQ did not confirm the copy of " + d.id() + " to '" + to + "' within "
          + confirmTimeout + ": " + e + " (it may still be stored: replaying again is a duplicate)", e);
    }
  }

  private Channel publishing() throws IOException {
    if (publishing == null || !publishing.isOpen()) {
      Channel ch = connection.createChannel();
      ch.confirmSelect();
      ch.addReturnListener(r -> returned = r.getProperties().getMessageId());
      publishing = ch;
    }
    return publishing;
  }

  private void closePublishing() {
    try {
      if (publishing != null && publishing.isOpen()) {
        publishing.close();
      }
    } catch (IOException | TimeoutException | RuntimeException ignored) {
      // gone either way
    }
    publishing = null;
  }

  /**
   * Refuses a queue that is missing, or whose dead letters could be dropped by returning them (the
   * class documentation).
   */
  private void checkReadable() {
    if (checked) {
      return;
    }
    Integer missing = attempt(ch -> ch.queueDeclarePassive(queue));
    if (missing != null) {
      throw new DeadLetterException(missing == NOT_FOUND ? "dead-letter queue '" + queue + "' does not exist"
          : "could not check dead-letter queue '" + queue + "' (reply " + missing + ")");
    }
    String version = serverVersion();
    if (!countsReturns(version)) {
      checked = true;
      return;
    }
    Map<String, Object> quorum = Map.of("x-queue-type", "quorum");
    Refusal plain = refusal(ch -> ch.queueDeclare(queue, true, false, false, quorum));
    boolean limited;
    if (plain == null) {
      limited = majorVersion(version) >= 4; // a quorum queue without x-delivery-limit: 4.x defaults to 20
    } else if (plain.code == PRECONDITION_FAILED && plain.text.contains("x-delivery-limit")) {
      Map<String, Object> unlimited = Map.of("x-queue-type", "quorum", "x-delivery-limit", -1);
      limited = majorVersion(version) < 4 || refusal(ch -> ch.queueDeclare(queue, true, false, false, unlimited)) != null;
    } else {
      limited = false; // not a quorum queue (x-queue-type differs): no delivery limit
    }
    if (limited) {
      throw new DeadLetterException("dead-letter queue '" + queue + "' is a quorum queue with a delivery limit"
          + (majorVersion(version) >= 4 ? " (RabbitMQ " + version + "'s default is 20)" : "") + ": every read"
          + " returns its messages, RabbitMQ " + version + " counts each return, and at the limit it would drop"
          + " them. Re-create it with x-delivery-limit=-1 (idem-rabbitmq's declareTopology does on RabbitMQ 4),"
          + " or move its messages to such a queue with a shovel, then read that one");
    }
    checked = true;
  }

  /** Whether a {@code basic.nack(multiple, requeue)} moves a quorum queue's delivery count: before 4.3. */
  static boolean countsReturns(String version) {
    Matcher m = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(version);
    if (!m.find()) {
      return true;
    }
    int major = Integer.parseInt(m.group(1));
    int minor = Integer.parseInt(m.group(2));
    return major < 4 || (major == 4 && minor < 3);
  }

  static int majorVersion(String version) {
    Matcher m = Pattern.compile("^(\\d+)\\.").matcher(version);
    return m.find() ? Integer.parseInt(m.group(1)) : 0;
  }

  private String serverVersion() {
    Object v = connection.getServerProperties() == null ? null : connection.getServerProperties().get("version");
    return v == null ? "" : v.toString();
  }

  @FunctionalInterface
  private interface Step {
    void run(Channel channel) throws IOException;
  }

  private record Refusal(int code, String text) {}

  private @Nullable Integer attempt(Step step) {
    Refusal r = refusal(step);
    return r == null ? null : r.code;
  }

  /** Runs {@code step} on a throw-away channel (RabbitMQ closes a channel whose declaration it refuses). */
  private @Nullable Refusal refusal(Step step) {
    Channel ch;
    try {
      ch = connection.createChannel();
    } catch (IOException e) {
      throw new DeadLetterException("could not open a channel: " + e, e);
    }
    try {
      step.run(ch);
      return null;
    } catch (IOException e) {
      if (e.getCause() instanceof ShutdownSignalException s && s.getReason() instanceof AMQP.Channel.Close c) {
        return new Refusal(c.getReplyCode(), c.getReplyText());
      }
      throw new DeadLetterException("RabbitMQ did not answer: " + e, e);
    } finally {
      try {
        if (ch.isOpen()) {
          ch.close();
        }
      } catch (IOException | TimeoutException | RuntimeException ignored) {
        // gone either way
      }
    }
  }

  private DeadLetter deadLetter(GetResponse g) {
    AMQP.BasicProperties p = g.getProps();
    Map<String, String> headers = new LinkedHashMap<>();
    if (p.getHeaders() != null) {
      p.getHeaders().forEach((name, value) -> {
        String text = text(value);
        if (text != null) {
          headers.put(name, text);
        }
      });
    }
    String id = p.getMessageId() != null ? p.getMessageId() : digest(g.getBody(), headers);
    return new DeadLetter(id, "rabbitmq", queue, source, headers, g.getBody() == null ? new byte[0] : g.getBody(),
        null, p.getTimestamp() == null ? null : p.getTimestamp().toInstant(),
        DeadLetterHeaders.reason(headers::get), DeadLetterHeaders.replayCount(headers::get));
  }

  private static @Nullable String text(@Nullable Object value) {
    if (value instanceof LongString s) {
      return Utf8.decodeStrict(s.getBytes());
    }
    if (value instanceof byte[] b) {
      return Utf8.decodeStrict(b);
    }
    if (value instanceof String || value instanceof Number || value instanceof Boolean) {
      return value.toString();
    }
    return null; // tables and arrays (x-death) are left out
  }

  private static String digest(byte @Nullable [] body, Map<String, String> headers) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update(body == null ? new byte[0] : body);
      new TreeMap<>(headers).forEach((k, v) -> {
        if (!BROKER_HEADERS.contains(k)) {
          sha.update((k + "=" + v + "\n").getBytes(StandardCharsets.UTF_8));
        }
      });
      return "sha256:" + HexFormat.of().formatHex(sha.digest(), 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  @Override
  public void close() {
    try {
      if (connection.isOpen()) {
        connection.close();
      }
    } catch (IOException | RuntimeException ignored) {
      // closing
    }
  }

  /** Builder of {@link RabbitDeadLetters}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory;
    private final String queue;
    private @Nullable String sourceQueue;
    private @Nullable String target;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;

    private Builder(ConnectionFactory factory, String queue) {
      this.factory = Objects.requireNonNull(factory, "factory");
      this.queue = Objects.requireNonNull(queue, "deadLetterQueue");
    }

    /** The queue the dead letters came from; default the name without {@value #DEFAULT_SUFFIX}. */
    public Builder sourceQueue(@Nullable String value) {
      this.sourceQueue = value;
      return this;
    }

    /** Replays to this queue instead of the source queue. */
    public Builder target(@Nullable String value) {
      this.target = value;
      return this;
    }

    /** How long a republished copy may take to be confirmed; default 30 s. */
    public Builder confirmTimeout(Duration value) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("confirmTimeout must be positive, but was " + value);
      }
      this.confirmTimeout = value;
      return this;
    }

    /** @throws DeadLetterException when RabbitMQ cannot be reached */
    public RabbitDeadLetters build() {
      return new RabbitDeadLetters(this);
    }
  }
}
