package io.idem.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import io.idem.spi.Settings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Immutable configuration of a {@link RabbitIdempotentConsumer}: which queue, how to reach the
 * broker, how much to prefetch, and what the queue and its dead-letter destination look like.
 * Build with {@link #builder(String)}; {@link Builder#build()} validates and copies.
 *
 * <h2>Queue topology</h2>
 *
 * The adapter needs a dead-letter exchange: it publishes messages it gives up on (no key, payload
 * conflict, non-retryable failure, past the retry policy's maximum attempts) there with the reason
 * in headers, and RabbitMQ itself dead-letters there what it removes from the queue (a quorum
 * queue's {@code x-delivery-limit}, TTLs, length limits). On {@link RabbitIdempotentConsumer#start()}
 * the adapter either declares the topology ({@link Builder#declareTopology(boolean)}) or verifies
 * it: the queue and the dead-letter exchange must exist, and the queue's arguments must equal the
 * configured ones ({@code x-queue-type}, {@code x-dead-letter-exchange},
 * {@code x-dead-letter-routing-key}, {@code x-delivery-limit} and any
 * {@link Builder#queueArgument(String, Object) extra}). RabbitMQ checks that equality itself when
 * a queue is re-declared, so a quorum queue with a delivery limit and no dead-letter exchange — one
 * that would silently drop messages past its limit — makes {@code start()} fail with an
 * {@link io.idem.IdempotencyException} that says so.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class RabbitConsumerConfig {

  /** Default {@link Builder#uri(String) uri}: {@value} (the local broker's default account). */
  public static final String DEFAULT_URI = "amqp://guest:guest@localhost:5672/%2F";
  /**
   * Floor of the default {@link Builder#prefetch(int) prefetch}: {@value} unacknowledged deliveries
   * per consumer. When {@code prefetch(int)} is not called, the prefetch is {@link
   * #defaultPrefetch(int) max(DEFAULT_PREFETCH, 2 × maxBatchSize)} — 20 with the default {@link
   * #DEFAULT_MAX_BATCH_SIZE}, 10 in per-message mode ({@code maxBatchSize(1)}): small, so that a
   * stopped or slow instance holds few messages away from the others, and in batch mode two
   * batches, so that the next batch is already buffered while one commits.
   */
  public static final int DEFAULT_PREFETCH = 10;
  /** Default {@link Builder#concurrency(int) concurrency}: {@value} worker thread. */
  public static final int DEFAULT_CONCURRENCY = 1;
  /**
   * Default {@link Builder#maxBatchSize(int) maxBatchSize}: {@value}, batch mode — a worker runs
   * the deliveries waiting in its prefetch window (up to 10, with the 5 ms linger) through one
   * store transaction, one multi-row claim and one COMMIT, then acks them with one {@code
   * basicAck(last, multiple=true)} when their tags are the channel's lowest unsettled ones (one
   * {@code basicAck} per tag otherwise), each delivery still only after the COMMIT that applied it.
   * {@code maxBatchSize(1)} is per-message mode: one transaction and one ack per delivery, with
   * runs (a delivery's claim travels with the previous one's COMMIT, see {@link
   * io.idem.IdempotentConsumer#openRun()}).
   *
   * <p>Why batch mode is the default: with a backlog it is several times faster and per-message
   * mode's guarantees hold in it — no delivery is acked before the transaction that applied it
   * committed, and a failing message does not poison its batch (the batch is redone message by
   * message, and only that one is retried, charged an attempt or dead-lettered). Measured on this
   * project's 2-core machine under load (PostgreSQL 15, RabbitMQ 3.10, quorum queue, one worker, a
   * one-row INSERT per message; docs/BROKERS.md, "RabbitMQ batch mode"): per-message 146
   * messages/s, {@code maxBatchSize(10)} with prefetch 10 641/s, with prefetch 20 (this default's)
   * 819/s (5.6×), {@code maxBatchSize(50)} with prefetch 100 2,092/s. The adapter kit and its crash
   * matrix pass on this default (quorum queues) and with {@code maxBatchSize(1)} (classic queues).
   *
   * <p>The costs batch mode keeps, where per-message mode has them for one delivery only:
   *
   * <ul>
   *   <li>a lost channel or connection returns the whole unacknowledged batch: RabbitMQ redelivers
   *       it, and what was committed is acked as duplicates;
   *   <li>{@link RabbitIdempotentConsumer#close()} finishes the batch in flight (up to 10
   *       deliveries) rather than one delivery, within {@link Builder#shutdownTimeout(Duration)};
   *   <li>a trickle of messages waits up to the 5 ms linger before each runs;
   *   <li>one failing message makes its batch run twice: handler code outside the store
   *       transaction (an HTTP call, a log line) may see the batch's other messages once more
   *       than they are applied (the rolled-back run).
   * </ul>
   */
  public static final int DEFAULT_MAX_BATCH_SIZE = 10;
  /** Default {@link Builder#queueType(RabbitQueueType) queue type}: classic. */
  public static final RabbitQueueType DEFAULT_QUEUE_TYPE = RabbitQueueType.CLASSIC;
  /** Suffix of the default dead-letter exchange name ({@code <queue>.dlx}): {@value}. */
  public static final String DEFAULT_DEAD_LETTER_EXCHANGE_SUFFIX = ".dlx";
  /** Suffix of the default dead-letter queue name ({@code <queue>.dlq}): {@value}. */
  public static final String DEFAULT_DEAD_LETTER_QUEUE_SUFFIX = ".dlq";
  /** Default {@link Builder#declareTopology(boolean)}: {@value} (verify, do not declare). */
  public static final boolean DEFAULT_DECLARE_TOPOLOGY = false;
  /** Default {@link Builder#verifyQueueArguments(boolean)}: {@value}. */
  public static final boolean DEFAULT_VERIFY_QUEUE_ARGUMENTS = true;
  /** Prefix of the default client-provided connection name ({@code idem-rabbitmq:<queue>}). */
  public static final String DEFAULT_CONNECTION_NAME_PREFIX = "idem-rabbitmq:";
  /** Default {@link Builder#shutdownTimeout(Duration) shutdown timeout}: 30 seconds. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
  /** Default {@link Builder#recoveryInterval(Duration) recovery interval}: 5 seconds. */
  public static final Duration DEFAULT_RECOVERY_INTERVAL = Duration.ofSeconds(5);
  /** Default {@link Builder#confirmTimeout(Duration) confirm timeout}: 10 seconds. */
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);
  /**
   * Default {@link Builder#consumerTimeout(Duration) consumer timeout}: 30 minutes, RabbitMQ's
   * default {@code consumer_timeout} (since 3.8.15).
   */
  public static final Duration DEFAULT_CONSUMER_TIMEOUT = Duration.ofMinutes(30);
  /**
   * Default {@link Builder#maxHold(Duration) max hold}: 25 minutes, a margin below
   * {@link #DEFAULT_CONSUMER_TIMEOUT}.
   */
  public static final Duration DEFAULT_MAX_HOLD = Duration.ofMinutes(25);
  /** The queue argument that overrides {@code consumer_timeout} per queue (RabbitMQ 3.12+), in ms. */
  public static final String CONSUMER_TIMEOUT_ARGUMENT = "x-consumer-timeout";

  private static final int MAX_NAME_BYTES = 255;
  /** The largest {@code basicQos} prefetch count AMQP 0-9-1 carries (a short). */
  private static final int MAX_PREFETCH = 65_535;

  private final String queue;
  private final String uri;
  private final int prefetch;
  /** Whether {@link #prefetch} was given ({@code toString()} marks a derived one "(default)"). */
  private final boolean prefetchSet;
  private final int concurrency;
  private final int maxBatchSize;
  private final RabbitQueueType queueType;
  private final @Nullable Integer deliveryLimit;
  private final String deadLetterExchange;
  private final @Nullable String deadLetterRoutingKey;
  private final String deadLetterQueue;
  private final boolean declareTopology;
  private final boolean verifyQueueArguments;
  private final Map<String, Object> extraQueueArguments;
  private final String connectionName;
  private final Duration shutdownTimeout;
  private final Duration recoveryInterval;
  private final Duration confirmTimeout;
  private final Duration consumerTimeout;
  private final Duration maxHold;

  private RabbitConsumerConfig(Builder b) {
    this.queue = b.queue;
    this.uri = b.uri;
    this.prefetch = b.effectivePrefetch();
    this.prefetchSet = b.prefetch != null;
    this.concurrency = b.concurrency;
    this.maxBatchSize = b.maxBatchSize;
    this.queueType = b.queueType;
    this.deliveryLimit = b.deliveryLimit;
    this.deadLetterExchange =
        b.deadLetterExchange != null ? b.deadLetterExchange : b.queue + DEFAULT_DEAD_LETTER_EXCHANGE_SUFFIX;
    this.deadLetterRoutingKey = b.deadLetterRoutingKey;
    this.deadLetterQueue =
        b.deadLetterQueue != null ? b.deadLetterQueue : b.queue + DEFAULT_DEAD_LETTER_QUEUE_SUFFIX;
    this.declareTopology = b.declareTopology;
    this.verifyQueueArguments = b.verifyQueueArguments;
    this.extraQueueArguments = Map.copyOf(b.extraQueueArguments);
    this.connectionName =
        b.connectionName != null ? b.connectionName : DEFAULT_CONNECTION_NAME_PREFIX + b.queue;
    this.shutdownTimeout = b.shutdownTimeout;
    this.recoveryInterval = b.recoveryInterval;
    this.confirmTimeout = b.confirmTimeout;
    this.consumerTimeout = b.consumerTimeout;
    this.maxHold = b.maxHold;
  }

  /**
   * Starts a configuration for consuming {@code queue}.
   *
   * @param queue the queue name, not blank, at most 255 UTF-8 bytes
   */
  public static Builder builder(String queue) {
    return new Builder(queue);
  }

  /** The queue consumed; also {@link io.idem.InboundMessage#source()} of its messages. */
  public String queue() {
    return queue;
  }

  /** The AMQP URI used by {@link RabbitIdempotentConsumer#create(RabbitConsumerConfig, io.idem.IdempotentConsumer)}. */
  public String uri() {
    return uri;
  }

  /**
   * {@code basicQos} prefetch count: unacknowledged deliveries per consumer, 1..65535 — the value
   * given to {@link Builder#prefetch(int)}, else {@link #defaultPrefetch(int)
   * defaultPrefetch(maxBatchSize())}.
   */
  public int prefetch() {
    return prefetch;
  }

  /**
   * The prefetch a configuration gets when {@link Builder#prefetch(int)} is not called: {@code
   * max(}{@value #DEFAULT_PREFETCH}{@code , 2 × maxBatchSize)}, at most 65535 (AMQP's limit) —
   * room for the batch a worker processes and the next one, which RabbitMQ delivers meanwhile, so
   * that the worker finds it buffered once the COMMIT and acks are done (measured with {@code
   * maxBatchSize} 10: prefetch 20 819 messages/s, prefetch 10 641/s; docs/BROKERS.md). It is sized for
   * one worker: the {@link #concurrency()} workers share the prefetch and this default does not grow
   * with them, so with several workers set {@code prefetch(2 × maxBatchSize × concurrency)} for
   * full batches on each.
   *
   * @param maxBatchSize at least 1
   * @throws IllegalArgumentException when {@code maxBatchSize} is below 1
   */
  public static int defaultPrefetch(int maxBatchSize) {
    Settings.atLeast("maxBatchSize", maxBatchSize, 1);
    return (int) Math.min(MAX_PREFETCH, Math.max(DEFAULT_PREFETCH, 2L * maxBatchSize));
  }

  /** Worker threads processing deliveries in parallel. */
  public int concurrency() {
    return concurrency;
  }

  /**
   * Most deliveries a worker runs through one transaction ({@link
   * io.idem.IdempotentConsumer#processBatch}); 1 is per-message mode. A batch is never larger
   * than {@link #prefetch()}.
   */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  public RabbitQueueType queueType() {
    return queueType;
  }

  /** The queue's {@code x-delivery-limit} (quorum only), or {@code null} when it has none. */
  public @Nullable Integer deliveryLimit() {
    return deliveryLimit;
  }

  /** The queue's dead-letter exchange ({@code x-dead-letter-exchange}). */
  public String deadLetterExchange() {
    return deadLetterExchange;
  }

  /**
   * The queue's {@code x-dead-letter-routing-key}, or {@code null}: dead letters keep the routing
   * key they were published with, as RabbitMQ does.
   */
  public @Nullable String deadLetterRoutingKey() {
    return deadLetterRoutingKey;
  }

  /** The queue bound to the dead-letter exchange when {@link #declareTopology()} is on. */
  public String deadLetterQueue() {
    return deadLetterQueue;
  }

  public boolean declareTopology() {
    return declareTopology;
  }

  public boolean verifyQueueArguments() {
    return verifyQueueArguments;
  }

  /**
   * Every argument the queue is declared or verified with: {@code x-queue-type},
   * {@code x-dead-letter-exchange}, {@code x-dead-letter-routing-key} and {@code x-delivery-limit}
   * when set, then the extra ones; unmodifiable, insertion-ordered.
   */
  public Map<String, Object> queueArguments() {
    Map<String, Object> args = new LinkedHashMap<>();
    args.put("x-queue-type", queueType.argument());
    args.put("x-dead-letter-exchange", deadLetterExchange);
    if (deadLetterRoutingKey != null) {
      args.put("x-dead-letter-routing-key", deadLetterRoutingKey);
    }
    if (deliveryLimit != null) {
      args.put("x-delivery-limit", deliveryLimit);
    }
    args.putAll(extraQueueArguments);
    return java.util.Collections.unmodifiableMap(args);
  }

  /** The client-provided connection name, shown by {@code rabbitmqctl list_connections}. */
  public String connectionName() {
    return connectionName;
  }

  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  public Duration recoveryInterval() {
    return recoveryInterval;
  }

  public Duration confirmTimeout() {
    return confirmTimeout;
  }

  /** The broker's {@code consumer_timeout} this configuration was checked against. */
  public Duration consumerTimeout() {
    return consumerTimeout;
  }

  /**
   * Longest time a delivery is held unacknowledged on this consumer — waiting for a retry backoff
   * or through a store outage — before it is handed back to the queue; see
   * {@link Builder#maxHold(Duration)}.
   */
  public Duration maxHold() {
    return maxHold;
  }

  @Override
  public String toString() {
    return "RabbitConsumerConfig[queue=" + queue + ", uri=" + uri.replaceAll("//([^:/@]+):[^@]*@", "//$1:***@")
        + ", prefetch=" + prefetch + (prefetchSet ? "" : " (default)") + ", concurrency=" + concurrency + ", maxBatchSize=" + maxBatchSize + ", queueArguments="
        + queueArguments() + ", declareTopology=" + declareTopology + ", deadLetterQueue="
        + deadLetterQueue + ", verifyQueueArguments=" + verifyQueueArguments
        + ", connectionName=" + connectionName + ", shutdownTimeout=" + shutdownTimeout
        + ", recoveryInterval=" + recoveryInterval + ", confirmTimeout=" + confirmTimeout + ", consumerTimeout=" + consumerTimeout
        + ", maxHold=" + maxHold + "]";
  }

  /** Builder of {@link RabbitConsumerConfig}. Not thread-safe. */
  public static final class Builder {
    private final String queue;
    private String uri = DEFAULT_URI;
    private @Nullable Integer prefetch;
    private int concurrency = DEFAULT_CONCURRENCY;
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private RabbitQueueType queueType = DEFAULT_QUEUE_TYPE;
    private @Nullable Integer deliveryLimit;
    private @Nullable String deadLetterExchange;
    private @Nullable String deadLetterRoutingKey;
    private @Nullable String deadLetterQueue;
    private boolean declareTopology = DEFAULT_DECLARE_TOPOLOGY;
    private boolean verifyQueueArguments = DEFAULT_VERIFY_QUEUE_ARGUMENTS;
    private final Map<String, Object> extraQueueArguments = new LinkedHashMap<>();
    private @Nullable String connectionName;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Duration recoveryInterval = DEFAULT_RECOVERY_INTERVAL;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private Duration consumerTimeout = DEFAULT_CONSUMER_TIMEOUT;
    private Duration maxHold = DEFAULT_MAX_HOLD;

    private Builder(String queue) {
      this.queue = Objects.requireNonNull(queue, "queue");
    }

    /**
     * AMQP URI of the broker, credentials and virtual host included; default {@value
     * RabbitConsumerConfig#DEFAULT_URI}. Ignored when a {@link ConnectionFactory} is passed to
     * {@link RabbitIdempotentConsumer#create(RabbitConsumerConfig, io.idem.IdempotentConsumer,
     * ConnectionFactory)}.
     */
    public Builder uri(String value) {
      this.uri = Objects.requireNonNull(value, "uri");
      return this;
    }

    /**
     * {@code basicQos} prefetch count, 1..65535: how many unacknowledged deliveries RabbitMQ pushes
     * to this consumer ahead of its workers. Default (when not called) {@link
     * RabbitConsumerConfig#defaultPrefetch(int) max(10, 2 × maxBatchSize)}: 20 with the default
     * batch size, 10 with {@code maxBatchSize(1)} — and it follows a {@link #maxBatchSize(int)}
     * set before or after. A value given here is kept as given, whatever the batch size.
     *
     * <p>It bounds a batch: a worker batches only what is in the window, so a prefetch below
     * {@code maxBatchSize} makes every batch at most {@code prefetch} deliveries — allowed (a
     * consumer that must hold few messages), and {@link RabbitIdempotentConsumer#start()} logs a
     * WARN once that says so; a prefetch below {@code 2 × maxBatchSize} leaves the worker waiting
     * for the next batch to arrive after each COMMIT. A delivery waiting for its retry backoff or
     * held through a store outage keeps its slot, so keep it above {@link #concurrency(int)} (at
     * least {@code concurrency × maxBatchSize} for every worker to get full batches).
     */
    public Builder prefetch(int value) {
      this.prefetch = value;
      return this;
    }

    /**
     * Worker threads, 1..prefetch; default {@value RabbitConsumerConfig#DEFAULT_CONCURRENCY}. Above
     * 1, messages of the queue are processed out of order.
     */
    public Builder concurrency(int value) {
      this.concurrency = value;
      return this;
    }

    /**
     * Most deliveries one worker runs through one database transaction, at least 1; default
     * {@value RabbitConsumerConfig#DEFAULT_MAX_BATCH_SIZE} (batch mode, see {@link
     * RabbitConsumerConfig#DEFAULT_MAX_BATCH_SIZE} for why and what it costs); 1 is per-message
     * mode, with runs. A batch is what the worker finds in its prefetch window when it takes a
     * delivery, plus what arrives within a linger of at most 5 ms when that is fewer than {@code
     * maxBatchSize} (so a trickle of messages runs one by one, each up to 5 ms later, and a backlog
     * runs in batches of up to {@code min(maxBatchSize, prefetch)}; the default prefetch, {@code
     * max(10, 2 × maxBatchSize)}, keeps the next batch arriving while one is processed). One
     * multi-row claim, the handler for each new message, one COMMIT, then the batch's acks — one
     * {@code basicAck(last, multiple=true)} when its tags are the channel's lowest unsettled ones,
     * else one {@code basicAck} per tag — on the channel that delivered it. A failing message does
     * not poison its batch: the batch is redone message by message and only that one is retried
     * (see {@link RabbitIdempotentConsumer}, "Batches").
     */
    public Builder maxBatchSize(int value) {
      this.maxBatchSize = value;
      return this;
    }

    /** Default {@link RabbitQueueType#CLASSIC}. */
    public Builder queueType(RabbitQueueType value) {
      this.queueType = Objects.requireNonNull(value, "queueType");
      return this;
    }

    /**
     * The quorum queue's {@code x-delivery-limit}, at least 1; default none (RabbitMQ 4.0+ then
     * applies 20, or a policy's). RabbitMQ dead-letters past it without Idem's reason headers.
     * Before 4.3 it counts every return (retry, channel loss, shutdown, a {@link #maxHold(Duration)}
     * hand-back); from 4.3 only {@code basic.reject} (Idem's retry) and a lost channel. Set it well
     * above the retry policy's {@code maxAttempts}; on servers before 4.3 add one per
     * {@code maxHold} of the longest store outage to ride out.
     */
    public Builder deliveryLimit(int value) {
      this.deliveryLimit = value;
      return this;
    }

    /** The queue's dead-letter exchange; default {@code <queue>.dlx}. */
    public Builder deadLetterExchange(String value) {
      this.deadLetterExchange = Objects.requireNonNull(value, "deadLetterExchange");
      return this;
    }

    /**
     * The queue's {@code x-dead-letter-routing-key}; default none (dead letters keep their original
     * routing key).
     */
    public Builder deadLetterRoutingKey(String value) {
      this.deadLetterRoutingKey = Objects.requireNonNull(value, "deadLetterRoutingKey");
      return this;
    }

    /**
     * The dead-letter queue declared with {@link #declareTopology(boolean)}; default
     * {@code <queue>.dlq}. Must differ from the consumed queue.
     */
    public Builder deadLetterQueue(String value) {
      this.deadLetterQueue = Objects.requireNonNull(value, "deadLetterQueue");
      return this;
    }

    /**
     * {@code true}: on start, declare (idempotently) the dead-letter exchange (fanout, durable), the
     * dead-letter queue bound to it (same queue type) and the queue with {@link
     * RabbitConsumerConfig#queueArguments()}, all durable. {@code false} (default): verify that they
     * exist as configured.
     */
    public Builder declareTopology(boolean value) {
      this.declareTopology = value;
      return this;
    }

    /**
     * {@code true} (default): on start, re-declare the queue with the configured arguments so that
     * RabbitMQ refuses a queue that differs. {@code false} only checks that the queue exists — for
     * queues whose dead-letter exchange or limits come from policies, which AMQP cannot see: then
     * the operator answers for the dead-letter exchange.
     */
    public Builder verifyQueueArguments(boolean value) {
      this.verifyQueueArguments = value;
      return this;
    }

    /**
     * Another queue argument to declare or verify (for example {@code x-max-length}); RabbitMQ's
     * re-declare check compares those too, so list every argument the queue has.
     */
    public Builder queueArgument(String name, Object value) {
      extraQueueArguments.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Client-provided connection name; default {@code idem-rabbitmq:<queue>}. */
    public Builder connectionName(String value) {
      this.connectionName = Objects.requireNonNull(value, "connectionName");
      return this;
    }

    /** How long {@link RabbitIdempotentConsumer#close()} waits for in-flight messages; default 30 s. */
    public Builder shutdownTimeout(Duration value) {
      this.shutdownTimeout = Objects.requireNonNull(value, "shutdownTimeout");
      return this;
    }

    /** Pause before reconnecting after the connection or channel was lost; default 5 s. */
    public Builder recoveryInterval(Duration value) {
      this.recoveryInterval = Objects.requireNonNull(value, "recoveryInterval");
      return this;
    }

    /** How long a dead-letter publish waits for the broker's confirm; default 10 s. */
    public Builder confirmTimeout(Duration value) {
      this.confirmTimeout = Objects.requireNonNull(value, "confirmTimeout");
      return this;
    }

    /**
     * The broker's {@code consumer_timeout} ({@code rabbitmq.conf}, default 30 min): a delivery
     * unacknowledged for longer makes RabbitMQ close the channel with a {@code PRECONDITION_FAILED}
     * error, which returns every delivery on it (counted toward a quorum queue's delivery limit
     * before 4.3). Set it when the broker's differs; default {@link
     * RabbitConsumerConfig#DEFAULT_CONSUMER_TIMEOUT}. Only used to check {@link #maxHold(Duration)}.
     */
    public Builder consumerTimeout(Duration value) {
      this.consumerTimeout = Objects.requireNonNull(value, "consumerTimeout");
      return this;
    }

    /**
     * Longest time a delivery is held unacknowledged on this consumer; default
     * {@link RabbitConsumerConfig#DEFAULT_MAX_HOLD}. Must be below {@link #consumerTimeout(Duration)}
     * and below the queue's {@code x-consumer-timeout} argument when one is configured, so that a
     * held delivery is handed back before the broker closes the channel for it.
     *
     * <ul>
     *   <li>a retry backoff longer than what is left of it is cut: the delivery is returned with
     *       {@code basic.reject(requeue)} (a failed attempt, as always) when {@code maxHold} since
     *       its receipt has passed;
     *   <li>a delivery held through a store outage is returned with {@code basic.nack(requeue)}
     *       once {@code maxHold} since its receipt has passed, and runs again when RabbitMQ
     *       redelivers it, with the same attempt. RabbitMQ 4.3+ does not count that nack toward a
     *       quorum queue's delivery limit; earlier versions do: an outage of {@code n × maxHold}
     *       costs a held message {@code n} of the limit there (see docs/BROKERS.md).
     * </ul>
     */
    public Builder maxHold(Duration value) {
      this.maxHold = Objects.requireNonNull(value, "maxHold");
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the setting and its value when one is out of range
     */
    public RabbitConsumerConfig build() {
      checkName("queue", queue);
      if (deadLetterExchange != null) {
        checkName("deadLetterExchange", deadLetterExchange);
      }
      if (deadLetterQueue != null) {
        checkName("deadLetterQueue", deadLetterQueue);
        if (deadLetterQueue.equals(queue)) {
          throw new IllegalArgumentException("deadLetterQueue must differ from queue, but both were '"
              + queue + "': dead letters would be consumed again and loop for ever");
        }
      }
      try {
        new ConnectionFactory().setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException(
            "uri must be an AMQP URI, but was '" + uri.replaceAll("//([^:/@]+):[^@]*@", "//$1:***@")
                + "': " + e.getMessage(), e);
      }
      Settings.atLeast("maxBatchSize", maxBatchSize, 1);
      if (prefetch != null) {
        Settings.inRange("prefetch", prefetch, 1, MAX_PREFETCH);
      }
      int effectivePrefetch = effectivePrefetch();
      if (concurrency < 1 || concurrency > effectivePrefetch) {
        throw new IllegalArgumentException("concurrency must be in 1..prefetch (" + effectivePrefetch
            + (prefetch == null ? ", the default for maxBatchSize " + maxBatchSize + "; set prefetch(int)" : "")
            + "), but was " + concurrency);
      }
      if (deliveryLimit != null) {
        if (queueType != RabbitQueueType.QUORUM) {
          throw new IllegalArgumentException(
              "deliveryLimit applies to quorum queues only, but was " + deliveryLimit
                  + " on a " + queueType + " queue (the default queue type is " + DEFAULT_QUEUE_TYPE
                  + "); set queueType(RabbitQueueType.QUORUM) as well");
        }
        Settings.atLeast("deliveryLimit", deliveryLimit, 1);
      }
      for (String reserved : new String[] {
          "x-queue-type", "x-dead-letter-exchange", "x-dead-letter-routing-key", "x-delivery-limit"}) {
        if (extraQueueArguments.containsKey(reserved)) {
          throw new IllegalArgumentException(
              "queueArgument '" + reserved + "' has its own setting, but was given as "
                  + extraQueueArguments.get(reserved));
        }
      }
      Settings.positive("shutdownTimeout", shutdownTimeout);
      Settings.positive("recoveryInterval", recoveryInterval);
      Settings.positive("confirmTimeout", confirmTimeout);
      Settings.positive("consumerTimeout", consumerTimeout);
      Settings.positive("maxHold", maxHold);
      if (maxHold.compareTo(consumerTimeout) >= 0) {
        throw new IllegalArgumentException("maxHold must be below consumerTimeout (" + consumerTimeout
            + ", the broker's consumer_timeout), but was " + maxHold + ": RabbitMQ would close the"
            + " channel of a delivery held that long");
      }
      if (extraQueueArguments.get(CONSUMER_TIMEOUT_ARGUMENT) instanceof Number ms
          && maxHold.toMillis() >= ms.longValue()) {
        throw new IllegalArgumentException("maxHold must be below the queue's " + CONSUMER_TIMEOUT_ARGUMENT
            + " (" + ms + " ms), but was " + maxHold + ": RabbitMQ would close the channel of a delivery"
            + " held that long");
      }
      return new RabbitConsumerConfig(this);
    }

    /** The prefetch given, else the default for the batch size; maxBatchSize already checked. */
    private int effectivePrefetch() {
      return prefetch != null ? prefetch : defaultPrefetch(maxBatchSize);
    }

    private static void checkName(String setting, String value) {
      if (value.isBlank() || value.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
        throw new IllegalArgumentException(
            setting + " must be non-blank and at most " + MAX_NAME_BYTES + " UTF-8 bytes, but was '"
                + value + "'");
      }
    }
  }
}
