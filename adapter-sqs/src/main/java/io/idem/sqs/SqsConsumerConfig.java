package io.idem.sqs;

import io.idem.spi.Settings;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;

/**
 * Immutable configuration of one {@link SqsIdempotentConsumer}. Build with
 * {@link #builder(String)} (the queue URL is the one required setting); every optional setting has
 * a {@code DEFAULT_*} constant below, written in its Javadoc. {@link Builder#build()} validates
 * every setting and names the setting and its value in the error ({@link io.idem.spi.Settings}).
 * Thread-safe (immutable); the builder is not. The settings are explained in docs/BROKERS.md
 * ("Amazon SQS").
 *
 * <p>SQS limits behind the ranges: {@code WaitTimeSeconds} 0–20 s, {@code MaxNumberOfMessages}
 * 1–10, visibility timeout up to 12 h, all in whole seconds.
 */
public final class SqsConsumerConfig {

  /** Default {@link #waitTime()} (long polling): 20 s, the SQS maximum. */
  public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(20);
  /** Default {@link #maxMessages()} per receive: {@value}, the SQS maximum. */
  public static final int DEFAULT_MAX_MESSAGES = 10;
  /** Default {@link #visibilityTimeout()}: 30 s (the SQS queue default). */
  public static final Duration DEFAULT_VISIBILITY_TIMEOUT = Duration.ofSeconds(30);
  /** Default {@link #visibilityHeartbeat()}: {@value}. */
  public static final boolean DEFAULT_VISIBILITY_HEARTBEAT = true;
  /** Default {@link #heartbeatShare()}: {@value} (extend once half the visibility timeout is used). */
  public static final double DEFAULT_HEARTBEAT_SHARE = 0.5;
  /** Default {@link #concurrency()}: {@value} worker thread. */
  public static final int DEFAULT_CONCURRENCY = 1;
  /**
   * Default {@link #maxBatchSize()}: {@value}, batch mode — what one {@code ReceiveMessage}
   * returns (at most 10, the SQS maximum) is processed with one store transaction and one COMMIT,
   * then deleted with one {@code DeleteMessageBatch}. Set {@code maxBatchSize(1)} for per-message
   * mode (one transaction, then one delete, per message).
   *
   * <p>What batch mode changes for a handler: a message that fails rolls its batch back and the
   * batch is redone message by message, so only that message is retried, charged an attempt or
   * dead-lettered, and each message is still deleted only after the transaction that applied it
   * committed. Handler code outside the store transaction (an HTTP call, a log line) may therefore
   * see a message of a failed batch once more than its attempts (the rolled-back run). {@code
   * close()} lets a started batch finish instead of handing back the messages behind the one in
   * hand, and a message's remaining visibility is checked when its batch starts.
   *
   * <p>Measured (docs/BROKERS.md, "Batch mode"; ElasticMQ in process, one worker): batches of 10
   * ran 2.7× per-message mode's events/s; the adapter kit and its crash matrix pass on this
   * default and with {@code maxBatchSize(1)}.
   */
  public static final int DEFAULT_MAX_BATCH_SIZE = 10;
  /** Default {@link #deleteBatchWindow()}: 100 ms. */
  public static final Duration DEFAULT_DELETE_BATCH_WINDOW = Duration.ofMillis(100);
  /** Default {@link #shutdownTimeout()}: 30 s. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
  /** Default {@link #pollErrorBackoff()}: 1 s. */
  public static final Duration DEFAULT_POLL_ERROR_BACKOFF = Duration.ofSeconds(1);

  /** Longest {@code WaitTimeSeconds} SQS accepts: 20 s. */
  public static final Duration MAX_WAIT_TIME = Duration.ofSeconds(20);
  /** Most messages one {@code ReceiveMessage} returns: {@value}. */
  public static final int MAX_MESSAGES = 10;
  /**
   * The visibility this consumer wants left on a message before it starts it: a quarter of the
   * visibility timeout, at most 1 s. A message with less left is not started (SQS may hand it to
   * another consumer meanwhile) — it is extended first, or skipped when it cannot be. Because the
   * consumer counts a message's visibility from just before its long poll was sent, {@link
   * Builder#build()} refuses a {@link #waitTime()} at or above the visibility timeout minus this
   * margin.
   */
  static Duration safetyMargin(Duration visibilityTimeout) {
    Duration quarter = visibilityTimeout.dividedBy(4);
    return quarter.compareTo(Duration.ofSeconds(1)) < 0 ? quarter : Duration.ofSeconds(1);
  }

  /** Longest visibility timeout SQS accepts: 12 h. */
  public static final Duration MAX_VISIBILITY_TIMEOUT = Duration.ofHours(12);

  private final String queueUrl;
  private final String queueName;
  private final Duration waitTime;
  private final int maxMessages;
  private final Duration visibilityTimeout;
  private final boolean visibilityHeartbeat;
  private final double heartbeatShare;
  private final int concurrency;
  private final int maxBatchSize;
  private final Duration deleteBatchWindow;
  private final @Nullable String deadLetterQueueUrl;
  private final Duration shutdownTimeout;
  private final Duration pollErrorBackoff;
  private final @Nullable URI endpoint;
  private final @Nullable String region;
  private final @Nullable AwsCredentialsProvider credentials;

  private SqsConsumerConfig(Builder b, String queueName) {
    this.queueUrl = b.queueUrl;
    this.queueName = queueName;
    this.waitTime = b.waitTime;
    this.maxMessages = b.maxMessages;
    this.visibilityTimeout = b.visibilityTimeout;
    this.visibilityHeartbeat = b.visibilityHeartbeat;
    this.heartbeatShare = b.heartbeatShare;
    this.concurrency = b.concurrency;
    this.maxBatchSize = b.maxBatchSize;
    this.deleteBatchWindow = b.deleteBatchWindow;
    this.deadLetterQueueUrl = b.deadLetterQueueUrl;
    this.shutdownTimeout = b.shutdownTimeout;
    this.pollErrorBackoff = b.pollErrorBackoff;
    this.endpoint = b.endpoint;
    this.region = b.region;
    this.credentials = b.credentials;
  }

  /**
   * Starts a configuration for the queue at {@code queueUrl} (standard or FIFO; FIFO queues are
   * recognised at {@code start()} from their {@code FifoQueue} attribute).
   *
   * @param queueUrl the queue URL as {@code GetQueueUrl} returns it
   */
  public static Builder builder(String queueUrl) {
    return new Builder(queueUrl);
  }

  /** The queue URL. */
  public String queueUrl() {
    return queueUrl;
  }

  /** The queue name (last path segment of the URL): what {@code InboundMessage.source()} reports. */
  public String queueName() {
    return queueName;
  }

  /**
   * Long-polling {@code WaitTimeSeconds} of each receive; whole seconds, 0–20 s, and shorter than
   * {@link #visibilityTimeout()} minus the safety margin (a quarter of it, at most 1 s).
   */
  public Duration waitTime() {
    return waitTime;
  }

  /** {@code MaxNumberOfMessages} of each receive; 1–10. */
  public int maxMessages() {
    return maxMessages;
  }

  /**
   * Visibility timeout requested on every receive (whole seconds, 1 s–12 h): how long a received
   * message stays hidden from other consumers before SQS delivers it again.
   */
  public Duration visibilityTimeout() {
    return visibilityTimeout;
  }

  /**
   * Whether held messages (waiting in a received batch, in the handler, or waiting for their
   * delete) get their visibility extended with {@code ChangeMessageVisibility} before it runs
   * out.
   */
  public boolean visibilityHeartbeat() {
    return visibilityHeartbeat;
  }

  /**
   * Share of the visibility timeout, in (0, 1), after which the heartbeat extends a held message
   * back to a full {@link #visibilityTimeout()}.
   */
  public double heartbeatShare() {
    return heartbeatShare;
  }

  /** Worker threads: messages (standard queue) or message groups (FIFO) of a batch in parallel. */
  public int concurrency() {
    return concurrency;
  }

  /**
   * Most messages processed in one store transaction (batch mode, {@link
   * io.idem.IdempotentConsumer#processBatch}; the default, {@value #DEFAULT_MAX_BATCH_SIZE}); 1 =
   * per-message mode, one transaction per message.
   * A batch is what one {@code ReceiveMessage} returns (at most {@link #maxMessages()}, so at most
   * 10), cut into batches of at most this many: on a standard queue one {@code processBatch(...,
   * UNORDERED)} per batch, on a FIFO queue one {@code processBatch(..., ORDERED)} per message
   * group of the receive (the groups run on the {@link #concurrency()} workers). One COMMIT per
   * batch, then the batch's deletes go out together in a {@code DeleteMessageBatch} (also with a
   * zero {@link #deleteBatchWindow()}). A failing message does not poison its batch: the batch is
   * redone message by message and only that message takes the retry or dead-letter path; on a
   * FIFO queue the rest of its group waits behind it, hidden, without an attempt being counted.
   */
  public int maxBatchSize() {
    return maxBatchSize;
  }

  /**
   * How long an acknowledged message may wait for its delete to be batched with others
   * ({@code DeleteMessageBatch}, up to 10 entries); zero deletes synchronously inside
   * {@code ack()} with {@code DeleteMessage}. Shorter than the visibility timeout.
   */
  public Duration deleteBatchWindow() {
    return deleteBatchWindow;
  }

  /**
   * Where dead-lettered messages are sent with their reason attributes, or {@code null} to rely on
   * the queue's {@code RedrivePolicy} (then the reason is only logged: SQS moves messages
   * unchanged).
   */
  public @Nullable String deadLetterQueueUrl() {
    return deadLetterQueueUrl;
  }

  /** Upper bound on a graceful {@code close()}. */
  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  /** Pause after a failed {@code ReceiveMessage} before the next one. */
  public Duration pollErrorBackoff() {
    return pollErrorBackoff;
  }

  /**
   * Endpoint of the client the consumer builds for itself (ElasticMQ, LocalStack, a VPC
   * endpoint), or {@code null} for the SDK's regional endpoint. Ignored when a client is given.
   */
  public @Nullable URI endpoint() {
    return endpoint;
  }

  /** Region of the client the consumer builds, or {@code null} for the SDK's region chain. */
  public @Nullable String region() {
    return region;
  }

  /**
   * Credentials of the client the consumer builds, or {@code null} for the SDK's default
   * provider chain.
   */
  public @Nullable AwsCredentialsProvider credentials() {
    return credentials;
  }

  @Override
  public String toString() {
    return "SqsConsumerConfig[queue=" + queueUrl + ", waitTime=" + waitTime
        + ", maxMessages=" + maxMessages + ", visibilityTimeout=" + visibilityTimeout
        + ", visibilityHeartbeat=" + visibilityHeartbeat + ", heartbeatShare=" + heartbeatShare
        + ", concurrency=" + concurrency + ", maxBatchSize=" + maxBatchSize + ", deleteBatchWindow=" + deleteBatchWindow
        + ", deadLetterQueue=" + (deadLetterQueueUrl == null ? "(queue RedrivePolicy)" : deadLetterQueueUrl)
        + ", shutdownTimeout=" + shutdownTimeout + ", pollErrorBackoff=" + pollErrorBackoff
        + (endpoint == null ? "" : ", endpoint=" + endpoint)
        + (region == null ? "" : ", region=" + region) + "]";
  }

  /** Builder of {@link SqsConsumerConfig}; not thread-safe. */
  public static final class Builder {
    private final String queueUrl;
    private Duration waitTime = DEFAULT_WAIT_TIME;
    private int maxMessages = DEFAULT_MAX_MESSAGES;
    private Duration visibilityTimeout = DEFAULT_VISIBILITY_TIMEOUT;
    private boolean visibilityHeartbeat = DEFAULT_VISIBILITY_HEARTBEAT;
    private double heartbeatShare = DEFAULT_HEARTBEAT_SHARE;
    private int concurrency = DEFAULT_CONCURRENCY;
    private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
    private Duration deleteBatchWindow = DEFAULT_DELETE_BATCH_WINDOW;
    private @Nullable String deadLetterQueueUrl;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Duration pollErrorBackoff = DEFAULT_POLL_ERROR_BACKOFF;
    private @Nullable URI endpoint;
    private @Nullable String region;
    private @Nullable AwsCredentialsProvider credentials;

    private Builder(String queueUrl) {
      this.queueUrl = Objects.requireNonNull(queueUrl, "queueUrl");
    }

    /** Default 20 s ({@link #DEFAULT_WAIT_TIME}); whole seconds, 0–20 s. */
    public Builder waitTime(Duration value) {
      this.waitTime = Objects.requireNonNull(value, "waitTime");
      return this;
    }

    /** Default {@value SqsConsumerConfig#DEFAULT_MAX_MESSAGES}; 1–10. */
    public Builder maxMessages(int value) {
      this.maxMessages = value;
      return this;
    }

    /** Default 30 s ({@link #DEFAULT_VISIBILITY_TIMEOUT}); whole seconds, 1 s–12 h. */
    public Builder visibilityTimeout(Duration value) {
      this.visibilityTimeout = Objects.requireNonNull(value, "visibilityTimeout");
      return this;
    }

    /** Default {@value SqsConsumerConfig#DEFAULT_VISIBILITY_HEARTBEAT}. */
    public Builder visibilityHeartbeat(boolean value) {
      this.visibilityHeartbeat = value;
      return this;
    }

    /** Default {@value SqsConsumerConfig#DEFAULT_HEARTBEAT_SHARE}; in (0, 1). */
    public Builder heartbeatShare(double value) {
      this.heartbeatShare = value;
      return this;
    }

    /** Default {@value SqsConsumerConfig#DEFAULT_CONCURRENCY}; at least 1. */
    public Builder concurrency(int value) {
      this.concurrency = value;
      return this;
    }

    /**
     * Default {@value SqsConsumerConfig#DEFAULT_MAX_BATCH_SIZE} ({@link #DEFAULT_MAX_BATCH_SIZE});
     * at least 1; 1 = per-message mode. Values above {@link #maxMessages(int) maxMessages} act as
     * {@code maxMessages} (a batch never spans two receives). See {@link
     * SqsConsumerConfig#maxBatchSize()}.
     */
    public Builder maxBatchSize(int value) {
      this.maxBatchSize = value;
      return this;
    }

    /**
     * Default 100 ms ({@link #DEFAULT_DELETE_BATCH_WINDOW}); zero = synchronous deletes in
     * per-message mode (in batch mode a batch's deletes are always sent together after its commit).
     */
    public Builder deleteBatchWindow(Duration value) {
      this.deleteBatchWindow = Objects.requireNonNull(value, "deleteBatchWindow");
      return this;
    }

    /**
     * Default none: rely on the queue's {@code RedrivePolicy}. A FIFO queue needs a FIFO
     * dead-letter queue, a standard queue a standard one.
     */
    public Builder deadLetterQueueUrl(@Nullable String value) {
      this.deadLetterQueueUrl = value;
      return this;
    }

    /** Default 30 s ({@link #DEFAULT_SHUTDOWN_TIMEOUT}); positive. */
    public Builder shutdownTimeout(Duration value) {
      this.shutdownTimeout = Objects.requireNonNull(value, "shutdownTimeout");
      return this;
    }

    /** Default 1 s ({@link #DEFAULT_POLL_ERROR_BACKOFF}); not negative. */
    public Builder pollErrorBackoff(Duration value) {
      this.pollErrorBackoff = Objects.requireNonNull(value, "pollErrorBackoff");
      return this;
    }

    /** Default none (the SDK's regional endpoint); used only when the consumer builds its client. */
    public Builder endpoint(@Nullable URI value) {
      this.endpoint = value;
      return this;
    }

    /** Default none (the SDK's region chain); used only when the consumer builds its client. */
    public Builder region(@Nullable String value) {
      this.region = value;
      return this;
    }

    /** Default none (the SDK's credentials chain); used only when the consumer builds its client. */
    public Builder credentials(@Nullable AwsCredentialsProvider value) {
      this.credentials = value;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming the setting and its value when one is out of range
     */
    public SqsConsumerConfig build() {
      String name = queueName(queueUrl);
      wholeSeconds("waitTime", waitTime, Duration.ZERO, MAX_WAIT_TIME);
      Settings.inRange("maxMessages", maxMessages, 1, MAX_MESSAGES);
      wholeSeconds("visibilityTimeout", visibilityTimeout, Duration.ofSeconds(1), MAX_VISIBILITY_TIMEOUT);
      if (!(heartbeatShare > 0.0 && heartbeatShare < 1.0)) {
        throw new IllegalArgumentException("heartbeatShare must be in (0, 1), but was " + heartbeatShare);
      }
      Settings.atLeast("concurrency", concurrency, 1);
      Settings.atLeast("maxBatchSize", maxBatchSize, 1);
      Duration margin = safetyMargin(visibilityTimeout);
      if (waitTime.compareTo(visibilityTimeout.minus(margin)) >= 0) {
        throw new IllegalArgumentException("waitTime (" + waitTime.getSeconds() + " s) must be shorter than"
            + " visibilityTimeout (" + visibilityTimeout.getSeconds() + " s) minus the safety margin ("
            + margin.toMillis() + " ms): messages returned at the end of a long poll would already look"
            + " too close to their visibility running out and be skipped unprocessed, each skip counted"
            + " by SQS as a receive; lower waitTime or raise visibilityTimeout");
      }
      if (deleteBatchWindow.isNegative() || deleteBatchWindow.compareTo(visibilityTimeout) >= 0) {
        throw new IllegalArgumentException("deleteBatchWindow must be >= 0 and shorter than visibilityTimeout ("
            + visibilityTimeout + "), but was " + deleteBatchWindow);
      }
      if (deadLetterQueueUrl != null) {
        queueName(deadLetterQueueUrl);
        if (deadLetterQueueUrl.equals(queueUrl)) {
          throw new IllegalArgumentException(
              "deadLetterQueueUrl must differ from queueUrl, but was " + deadLetterQueueUrl);
        }
      }
      Settings.positive("shutdownTimeout", shutdownTimeout);
      Settings.notNegative("pollErrorBackoff", pollErrorBackoff);
      if (region != null) {
        Settings.notBlank("region", region);
      }
      return new SqsConsumerConfig(this, name);
    }

    private static void wholeSeconds(String setting, Duration value, Duration min, Duration max) {
      if (value.getNano() != 0 || value.compareTo(min) < 0 || value.compareTo(max) > 0) {
        throw new IllegalArgumentException(setting + " must be whole seconds between " + min.getSeconds()
            + " s and " + max.getSeconds() + " s, but was " + value);
      }
    }

    private static String queueName(String url) {
      URI uri;
      try {
        uri = URI.create(url.trim());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("queue URL must be a URL, but was '" + url + "'", e);
      }
      String path = uri.getPath();
      if (uri.getScheme() == null || path == null || path.isEmpty() || path.endsWith("/")) {
        throw new IllegalArgumentException(
            "queue URL must look like https://sqs.<region>.amazonaws.com/<account>/<queue>, but was '" + url + "'");
      }
      return path.substring(path.lastIndexOf('/') + 1);
    }
  }
}
