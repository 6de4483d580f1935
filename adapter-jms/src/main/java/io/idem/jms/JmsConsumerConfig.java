package io.idem.jms;

import io.idem.spi.Settings;
import jakarta.jms.ConnectionFactory;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Immutable configuration of a {@link JmsIdempotentConsumer}. Build with
 * {@link #builder(ConnectionFactory, String, String)}; {@link Builder#build()} validates and names
 * the setting and value in its message.
 *
 * <p>The broker's own redelivery limit and dead-letter address are read at {@link
 * JmsIdempotentConsumer#start()} from ActiveMQ Artemis (management messages), or declared here for
 * other providers ({@link Builder#brokerMaxDeliveryAttempts(int)}, {@link
 * Builder#brokerDeadLetterQueue(String)}); see {@link JmsIdempotentConsumer} for how they relate to
 * the pipeline's {@link io.idem.RetryPolicy}.
 */
public final class JmsConsumerConfig {

  /** Default {@link #concurrency()}: {@value} worker session. */
  public static final int DEFAULT_CONCURRENCY = 1;
  /**
   * Default {@link #maxBatchSize()}: {@value}, batch mode, in both session modes. A batch is what
   * the worker's session has at once (a blocking {@code receive}, then up to 9 {@code
   * receiveNoWait()}): one multi-row claim and one database COMMIT ({@link
   * io.idem.IdempotentConsumer#processBatch}), then one {@code session.commit()} ({@link
   * JmsSessionMode#TRANSACTED}) or one {@code acknowledge()} ({@link
   * JmsSessionMode#CLIENT_ACKNOWLEDGE}) for the batch, instead of n of each. Measured on this
   * project's 2-core machine under load (embedded Artemis 2.56, PostgreSQL 15, one transacted
   * worker, a one-row INSERT per message, 3,000 messages waiting, two rounds; docs/BROKERS.md, JMS,
   * "Batch mode"): per-message 113–159 messages/s, batches of 10 346–820/s (3–5×), of 50
   * 823–2,466/s. Without a backlog a batch is one message and costs what per-message mode costs.
   * {@code maxBatchSize(1)} is per-message mode (one claim, one COMMIT, one session commit per
   * message). The adapter kit and its crash matrix pass on this default and with {@code
   * maxBatchSize(1)}; every guarantee holds in both (settled only after the COMMIT that applied
   * it, a failing message redone alone and charged alone, dead-lettered with its reason).
   *
   * <p>What batch mode still costs (see {@link JmsIdempotentConsumer}, "Batches"):
   *
   * <ul>
   *   <li>A failing message's applied neighbours stay unacknowledged in the session through its
   *       backoffs (it is retried inside the session), and with one worker the messages behind it
   *       wait too. This cannot be removed: a session's {@code commit()} — and in {@code
   *       CLIENT_ACKNOWLEDGE} a {@code Message.acknowledge()} — settles every message the session
   *       received, the failing one included, and a message can be settled only by the session
   *       that received it (a second session cannot take it over). Committing what succeeded
   *       before the backoff would therefore consume the failing message unapplied; handing it
   *       back first ({@code rollback()} / {@code recover()}) returns the neighbours with it, each
   *       with a {@code JMSXDeliveryCount} one higher, counted against the broker's {@code
   *       max-delivery-attempts}; re-sending it as a copy in the committing transaction would
   *       give it a new {@code JMSMessageID}, put it behind the messages it must precede, and
   *       lose its broker delivery count. None of these is safe, so the neighbours wait.
   *   <li>A broken connection, {@link JmsIdempotentConsumer#close()} interrupting a batch, a
   *       dead-letter copy that could not be sent or an unreadable message returns the whole
   *       session: its applied messages come back with a higher {@code JMSXDeliveryCount} and are
   *       acked as duplicates.
   *   <li>A message that fails rolls back its batch's database transaction, and the batch is
   *       redone message by message: handler code outside the store transaction may see a
   *       message of a failed batch once more than its attempts (the rolled-back run).
   * </ul>
   *
   * <p>{@code CLIENT_ACKNOWLEDGE} behaves the same way: one {@code acknowledge()} on the batch's
   * last message acknowledges the whole batch (the spec's session-wide acknowledge), a message to
   * retry is retried inside the session, and {@code recover()} returns the whole session.
   */
  public static final int DEFAULT_MAX_BATCH_SIZE = 10;
  /** Default {@link #sessionMode()}: {@link JmsSessionMode#TRANSACTED}. */
  public static final JmsSessionMode DEFAULT_SESSION_MODE = JmsSessionMode.TRANSACTED;
  /** Default {@link #receiveTimeout()}: 1 second. */
  public static final Duration DEFAULT_RECEIVE_TIMEOUT = Duration.ofSeconds(1);
  /** Default {@link #shutdownTimeout()}: 30 seconds. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
  /** Default {@link #reconnectBackoff()}: 1 second. */
  public static final Duration DEFAULT_RECONNECT_BACKOFF = Duration.ofSeconds(1);
  /** Default {@link #verifyDeadLetterQueue()}: {@value}. */
  public static final boolean DEFAULT_VERIFY_DEAD_LETTER_QUEUE = true;
  /**
   * Default {@link #holdForRetryBackoff()}: {@value} (the pipeline's backoff is honoured even when
   * the broker has no redelivery delay, which is Artemis' default).
   */
  public static final boolean DEFAULT_HOLD_FOR_RETRY_BACKOFF = true;
  /** {@link Builder#brokerMaxDeliveryAttempts(int)} of a broker that redelivers forever: {@value}. */
  public static final int BROKER_UNLIMITED = -1;

  private final ConnectionFactory connectionFactory;
  private final String queue;
  private final String deadLetterQueue;
  private final int concurrency;
  private final int maxBatchSize;
  private final JmsSessionMode sessionMode;
  private final Duration receiveTimeout;
  private final Duration shutdownTimeout;
  private final Duration reconnectBackoff;
  private final boolean verifyDeadLetterQueue;
  private final boolean holdForRetryBackoff;
  private final @Nullable String messageSelector;
  private final @Nullable Integer brokerMaxDeliveryAttempts;
  private final @Nullable String brokerDeadLetterQueue;

  private JmsConsumerConfig(Builder b) {
    this.brokerMaxDeliveryAttempts = b.brokerMaxDeliveryAttempts;
    this.brokerDeadLetterQueue = b.brokerDeadLetterQueue;
    this.connectionFactory = b.connectionFactory;
    this.queue = b.queue;
    this.deadLetterQueue = b.deadLetterQueue;
    this.concurrency = b.concurrency;
    this.maxBatchSize = b.maxBatchSize;
    this.sessionMode = b.sessionMode;
    this.receiveTimeout = b.receiveTimeout;
    this.shutdownTimeout = b.shutdownTimeout;
    this.reconnectBackoff = b.reconnectBackoff;
    this.verifyDeadLetterQueue = b.verifyDeadLetterQueue;
    this.holdForRetryBackoff = b.holdForRetryBackoff;
    this.messageSelector = b.messageSelector;
  }

  /**
   * Starts a configuration.
   *
   * @param connectionFactory any Jakarta Messaging 3.x connection factory (thread-safe by the
   *     spec); credentials, client id and prefetch are configured on it
   * @param queue the queue to consume, as {@code Session.createQueue(String)} names it
   * @param deadLetterQueue the queue dead-lettered messages are sent to, with the reason as
   *     properties; should be the broker's own dead-letter destination for {@code queue}, so that
   *     the broker's backstop and Idem's dead letters land in one place
   */
  public static Builder builder(ConnectionFactory connectionFactory, String queue, String deadLetterQueue) {
    return new Builder(connectionFactory, queue, deadLetterQueue);
  }

  /** The connection factory every worker opens its own connection from. */
  public ConnectionFactory connectionFactory() {
    return connectionFactory;
  }

  /** The queue consumed; also {@link io.idem.InboundMessage#source()}. */
  public String queue() {
    return queue;
  }

  /** The queue dead letters are sent to. */
  public String deadLetterQueue() {
    return deadLetterQueue;
  }

  /** Number of worker threads, each with its own connection and session. */
  public int concurrency() {
    return concurrency;
  }

  /**
   * Most messages a worker's session holds in one batch: one {@link
   * io.idem.IdempotentConsumer#processBatch}, one database COMMIT, one session commit (or
   * acknowledge); 1 is per-message mode. See {@link Builder#maxBatchSize(int)}.
   */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /** How messages are settled. */
  public JmsSessionMode sessionMode() {
    return sessionMode;
  }

  /**
   * How long one {@code MessageConsumer.receive} waits before checking whether the consumer is
   * closing; bounds how long {@link JmsIdempotentConsumer#close()} waits for an idle worker.
   */
  public Duration receiveTimeout() {
    return receiveTimeout;
  }

  /**
   * How long {@link JmsIdempotentConsumer#close()} waits for in-flight messages to finish, on top
   * of one {@link #receiveTimeout()}. Zero is allowed: {@code close()} then waits only one
   * {@code receiveTimeout} (long enough for an idle worker to notice) and closes the connection of
   * every worker still busy, so its message is rolled back, not acknowledged, and redelivered.
   */
  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  /**
   * Pause before a worker reconnects after its connection or session failed, and before it
   * receives again after processing threw an {@link Error}; always positive.
   */
  public Duration reconnectBackoff() {
    return reconnectBackoff;
  }

  /**
   * Whether {@link JmsIdempotentConsumer#start()} checks (with a {@code QueueBrowser}) that the
   * dead-letter queue exists and refuses to start when the provider says it does not.
   */
  public boolean verifyDeadLetterQueue() {
    return verifyDeadLetterQueue;
  }

  /**
   * Whether a failed message is held, with its JMS transaction (or session) still open, for the
   * pipeline's backoff ({@code RetryPolicy.backoff(attempt)}) before the rollback or recover. On
   * by default: the JMS API has no per-message redelivery delay, and ActiveMQ Artemis' default
   * {@code redelivery-delay} is 0, so without the hold every attempt would come back at once. The
   * hold blocks only the worker that holds the message (each worker has its own session); it is
   * shortened by the broker's own delay where the adapter knows it (Artemis {@code
   * redelivery-delay}, {@code redelivery-delay-multiplier}, {@code max-redelivery-delay}, read at
   * start), so the two do not add up; {@link JmsIdempotentConsumer#close()} cuts it short (the
   * message is then rolled back). Off: the broker's redelivery delay alone spaces redeliveries.
   */
  public boolean holdForRetryBackoff() {
    return holdForRetryBackoff;
  }

  /**
   * The broker's redelivery limit as declared with {@link Builder#brokerMaxDeliveryAttempts(int)},
   * or {@code null} when undeclared (then read from ActiveMQ Artemis at start; with any other
   * provider {@link JmsIdempotentConsumer#start()} refuses to start).
   */
  public @Nullable Integer brokerMaxDeliveryAttempts() {
    return brokerMaxDeliveryAttempts;
  }

  /**
   * The queue the broker moves a message to at its limit, as declared with {@link
   * Builder#brokerDeadLetterQueue(String)}, or {@code null} (none: the broker drops it).
   */
  public @Nullable String brokerDeadLetterQueue() {
    return brokerDeadLetterQueue;
  }

  /** A JMS message selector, or {@code null} for every message. */
  public @Nullable String messageSelector() {
    return messageSelector;
  }

  @Override
  public String toString() {
    return "JmsConsumerConfig[queue=" + queue + ", deadLetterQueue=" + deadLetterQueue
        + ", concurrency=" + concurrency + ", maxBatchSize=" + maxBatchSize + ", sessionMode=" + sessionMode
        + ", receiveTimeout=" + receiveTimeout + ", shutdownTimeout=" + shutdownTimeout
        + ", reconnectBackoff=" + reconnectBackoff + ", verifyDeadLetterQueue=" + verifyDeadLetterQueue
        + ", holdForRetryBackoff=" + holdForRetryBackoff + ", messageSelector=" + messageSelector
        + ", brokerMaxDeliveryAttempts=" + brokerMaxDeliveryAttempts
        + ", brokerDeadLetterQueue=" + brokerDeadLetterQueue
        + ", connectionFactory=" + connectionFactory.getClass().getName() + "]";
  }

  /** Builder of {@link JmsConsumerConfig}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory connectionFactory;
    private final String queue;
    private final String deadLetterQueue;
    private int concurrency = DEFAULT_CONCURRENCY;
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private JmsSessionMode sessionMode = DEFAULT_SESSION_MODE;
    private Duration receiveTimeout = DEFAULT_RECEIVE_TIMEOUT;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Duration reconnectBackoff = DEFAULT_RECONNECT_BACKOFF;
    private boolean verifyDeadLetterQueue = DEFAULT_VERIFY_DEAD_LETTER_QUEUE;
    private boolean holdForRetryBackoff = DEFAULT_HOLD_FOR_RETRY_BACKOFF;
    private @Nullable String messageSelector;
    private @Nullable Integer brokerMaxDeliveryAttempts;
    private @Nullable String brokerDeadLetterQueue;

    private Builder(ConnectionFactory connectionFactory, String queue, String deadLetterQueue) {
      this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
      this.queue = Objects.requireNonNull(queue, "queue");
      this.deadLetterQueue = Objects.requireNonNull(deadLetterQueue, "deadLetterQueue");
    }

    /** Default {@value JmsConsumerConfig#DEFAULT_CONCURRENCY}; at least 1. */
    public Builder concurrency(int value) {
      this.concurrency = value;
      return this;
    }

    /**
     * Most messages one worker session takes into one batch, at least 1; default {@value
     * JmsConsumerConfig#DEFAULT_MAX_BATCH_SIZE} (batch mode, in either {@link JmsSessionMode}; why
     * and what it costs: {@link JmsConsumerConfig#DEFAULT_MAX_BATCH_SIZE}); 1 is per-message mode. After a blocking {@code
     * receive} returned a message, the worker takes up to {@code maxBatchSize - 1} more with
     * {@code receiveNoWait()} (what the client already buffered; it never waits for more), runs
     * them through one {@link io.idem.IdempotentConsumer#processBatch}, then settles the session
     * once. A session cannot acknowledge one message and roll back another, so a message of the
     * batch that must be retried is retried inside the session, without a rollback: see {@link
     * JmsIdempotentConsumer}, "Batches".
     */
    public Builder maxBatchSize(int value) {
      this.maxBatchSize = value;
      return this;
    }

    /** Default {@link JmsSessionMode#TRANSACTED}. */
    public Builder sessionMode(JmsSessionMode value) {
      this.sessionMode = Objects.requireNonNull(value, "sessionMode");
      return this;
    }

    /** Default 1 s; at least 1 ms. */
    public Builder receiveTimeout(Duration value) {
      this.receiveTimeout = Objects.requireNonNull(value, "receiveTimeout");
      return this;
    }

    /**
     * Default 30 s; not negative. Zero: {@code close()} does not wait for in-flight messages beyond
     * one receive timeout; they are rolled back and redelivered (see
     * {@link JmsConsumerConfig#shutdownTimeout()}).
     */
    public Builder shutdownTimeout(Duration value) {
      this.shutdownTimeout = Objects.requireNonNull(value, "shutdownTimeout");
      return this;
    }

    /** Default 1 s; must be > 0 (a zero pause would spin on a failing connection or message). */
    public Builder reconnectBackoff(Duration value) {
      this.reconnectBackoff = Objects.requireNonNull(value, "reconnectBackoff");
      return this;
    }

    /** Default {@value JmsConsumerConfig#DEFAULT_VERIFY_DEAD_LETTER_QUEUE}. */
    public Builder verifyDeadLetterQueue(boolean value) {
      this.verifyDeadLetterQueue = value;
      return this;
    }

    /** Default {@value JmsConsumerConfig#DEFAULT_HOLD_FOR_RETRY_BACKOFF}. */
    public Builder holdForRetryBackoff(boolean value) {
      this.holdForRetryBackoff = value;
      return this;
    }

    /**
     * Declares the broker's redelivery limit for the queue: the delivery count after which the
     * broker itself stops redelivering (moves the message to {@link #brokerDeadLetterQueue} or
     * drops it), or {@link JmsConsumerConfig#BROKER_UNLIMITED}. Required for providers other than
     * ActiveMQ Artemis (whose address settings are read at start instead; a declared value is used
     * as it is and Artemis is not asked, for users who may not send management messages). Idem
     * then dead-letters, with its reason, at the lower of this and {@code RetryPolicy.maxAttempts()}.
     * Default undeclared; at least 1, or {@link JmsConsumerConfig#BROKER_UNLIMITED}.
     */
    public Builder brokerMaxDeliveryAttempts(int value) {
      this.brokerMaxDeliveryAttempts = value;
      return this;
    }

    /**
     * Declares where the broker moves a message at {@link #brokerMaxDeliveryAttempts(int)}
     * (ActiveMQ Classic: {@code ActiveMQ.DLQ}; IBM MQ: the backout queue); {@code null}, the
     * default, means nowhere: with a limited broker {@link JmsIdempotentConsumer#start()} then
     * refuses to start, since the broker would drop a message. Checked to exist at start.
     */
    public Builder brokerDeadLetterQueue(@Nullable String value) {
      this.brokerDeadLetterQueue = value == null || value.isBlank() ? null : value;
      return this;
    }

    /** Default none (every message). */
    public Builder messageSelector(@Nullable String value) {
      this.messageSelector = value == null || value.isBlank() ? null : value;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the setting and its value when one is out of range
     */
    public JmsConsumerConfig build() {
      Settings.notBlank("queue", queue);
      Settings.notBlank("deadLetterQueue", deadLetterQueue);
      if (deadLetterQueue.equals(queue)) {
        throw new IllegalArgumentException(
            "deadLetterQueue must differ from queue, but both were '" + queue + "'");
      }
      Settings.atLeast("concurrency", concurrency, 1);
      Settings.atLeast("maxBatchSize", maxBatchSize, 1);
      if (receiveTimeout.toMillis() < 1) {
        throw new IllegalArgumentException("receiveTimeout must be >= 1 ms, but was " + receiveTimeout);
      }
      Settings.notNegative("shutdownTimeout", shutdownTimeout);
      Settings.positive("reconnectBackoff", reconnectBackoff);
      if (brokerMaxDeliveryAttempts != null && brokerMaxDeliveryAttempts < 1
          && brokerMaxDeliveryAttempts != BROKER_UNLIMITED) {
        throw new IllegalArgumentException("brokerMaxDeliveryAttempts must be >= 1 or BROKER_UNLIMITED ("
            + BROKER_UNLIMITED + "), but was " + brokerMaxDeliveryAttempts);
      }
      return new JmsConsumerConfig(this);
    }
  }
}
