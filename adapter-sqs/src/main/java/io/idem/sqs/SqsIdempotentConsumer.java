package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.spi.AdapterWorker;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;

/**
 * Consumes one SQS queue (standard or FIFO) through an {@link IdempotentConsumer} pipeline: the
 * {@link BrokerConsumer} of {@code idem-sqs}. Build it with {@link #create(SqsConsumerConfig,
 * IdempotentConsumer)} (or on your own {@link SqsClient}), then {@link #start()} and
 * {@link #close()}.
 *
 * <p><b>Contract.</b> A message is deleted only after its store transaction ended
 * (docs/ADAPTERS.md rule 1), with the receipt handle of that delivery; a retry sets its visibility
 * to the backoff; a dead letter is copied with its reason to the dead-letter queue (the configured
 * one, else the target of the queue's {@code RedrivePolicy}), then deleted ({@link
 * SqsAcknowledgement}). An attempt is a handler run, not a receive ({@link AttemptLedger}); a
 * message whose handler may have killed the process is counted in the store before it runs again
 * and dead-lettered after at most {@code maxAttempts} deaths; a store outage keeps the message
 * hidden and runs it again in process, so its {@code ApproximateReceiveCount} does not grow. The
 * details — loop, visibility heartbeat, FIFO lanes, batch mode, dead letters, failures, close —
 * are in docs/BROKERS.md ("Amazon SQS"); how the adapter meets the shared rules in
 * docs/ADAPTERS.md ("How the SQS adapter fits the shared pieces").
 *
 * <p><b>Where the behaviour comes from.</b> One poller thread ({@link Receiver}) long-polls
 * {@code ReceiveMessage}; each receive is split into lanes ({@link LaneRunner}) — one per message
 * on a standard queue, one per {@code MessageGroupId} on a FIFO queue, in order — or, with
 * {@code maxBatchSize} above 1, into batches ({@link BatchRunner}: one COMMIT and one
 * {@code DeleteMessageBatch} per batch). Each message runs through {@link
 * io.idem.spi.AdapterWorker#survive}, as in the other adapters: what processing throws before the
 * message was settled releases it after the retry backoff (on a FIFO queue the rest of its group
 * is handed back, not counted), thrown after, it changes nothing; a {@link VirtualMachineError}
 * stops the consumer and the messages in hand reappear when their visibility runs out. {@link
 * VisibilityKeeper} extends every held message; {@link DeleteBatcher} batches the deletes within
 * {@code deleteBatchWindow}.
 *
 * <p><b>Threading.</b> Thread-safe. The consumer owns its threads: one poller, {@code
 * concurrency} workers, one timer (heartbeat and delete flush); the next receive follows when the
 * batch is done and its deletes were flushed. The {@link SqsClient} is shared by them (the SDK
 * documents it as thread-safe).
 *
 * <p><b>Defaults</b> ({@link SqsConsumerConfig}'s {@code DEFAULT_*}): 20 s long polls of up to 10
 * messages, a 30 s visibility timeout extended once half of it is used, one worker, batch mode
 * (one COMMIT and one {@code DeleteMessageBatch} per receive of up to 10; {@code maxBatchSize(1)}
 * for per-message mode), deletes batched within 100 ms, a 30 s {@code shutdownTimeout}. {@link #start()} checks the
 * queue, the dead-letter queue or {@code RedrivePolicy}, and warns when the queue's {@code
 * maxReceiveCount} is not above {@code maxAttempts}. {@link #close()} is graceful within {@code
 * shutdownTimeout} (keep {@code waitTime} below it), then interrupts the handlers: an interrupted
 * handler's message is released (visibility 0), not an attempt.
 */
public final class SqsIdempotentConsumer implements BrokerConsumer {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);

  /** How long {@link #close()} waits for the poller it interrupted as a last resort. */
  private static final Duration POLLER_AFTER_INTERRUPT = Duration.ofSeconds(2);

  private final SqsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final SqsClient sqs;
  private final boolean ownsClient;
  private final AttemptLedger ledger;
  private final VisibilityKeeper keeper;
  private final DeleteBatcher deletes;
  private final Object lifecycle = new Object();
  /** The worker pool's threads, for close() to interrupt handlers still running past its timeout. */
  private final Set<Thread> workerThreads = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean stopping = new AtomicBoolean();

  private volatile boolean started;
  private boolean closed;
  private boolean fifo;
  private volatile @Nullable LaneRunner lanes;
  private volatile @Nullable Receiver receiver;
  private @Nullable Thread poller;
  private @Nullable ExecutorService workers;
  private @Nullable ScheduledExecutorService timer;

  private SqsIdempotentConsumer(
      SqsConsumerConfig config, IdempotentConsumer<?> pipeline, SqsClient sqs, boolean ownsClient) {
    this.config = config;
    this.pipeline = pipeline;
    this.sqs = sqs;
    this.ownsClient = ownsClient;
    this.ledger = AttemptLedger.forQueue(config.queueUrl());
    this.keeper = new VisibilityKeeper(
        sqs, config.queueUrl(), config.visibilityTimeout(), config.heartbeatShare(), ledger);
    this.deletes = new DeleteBatcher(sqs, config.queueUrl(), config.deleteBatchWindow(), keeper,
        config.maxBatchSize() > 1);
  }

  /**
   * A consumer with its own {@link SqsClient} built from the configuration ({@code endpoint},
   * {@code region}, {@code credentials}; the SDK's defaults where unset) on the
   * url-connection HTTP client; {@link #close()} closes it.
   */
  public static SqsIdempotentConsumer create(SqsConsumerConfig config, IdempotentConsumer<?> pipeline) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(pipeline, "pipeline");
    return new SqsIdempotentConsumer(config, pipeline, buildClient(config), true);
  }

  /**
   * A consumer on the application's {@link SqsClient}, which it does not close. The client's
   * read timeout must exceed {@link SqsConsumerConfig#waitTime()}.
   */
  public static SqsIdempotentConsumer create(
      SqsConsumerConfig config, IdempotentConsumer<?> pipeline, SqsClient sqs) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(sqs, "sqs");
    return new SqsIdempotentConsumer(config, pipeline, sqs, false);
  }

  private static SqsClient buildClient(SqsConsumerConfig config) {
    Duration readTimeout = config.waitTime().plusSeconds(10);
    SqsClientBuilder builder = SqsClient.builder()
        .httpClientBuilder(UrlConnectionHttpClient.builder()
            .socketTimeout(readTimeout.compareTo(Duration.ofSeconds(30)) > 0 ? readTimeout : Duration.ofSeconds(30))
            .connectionTimeout(Duration.ofSeconds(5)));
    if (config.endpoint() != null) {
      builder.endpointOverride(config.endpoint());
    }
    if (config.region() != null) {
      builder.region(Region.of(config.region()));
    }
    if (config.credentials() != null) {
      builder.credentialsProvider(config.credentials());
    }
    return builder.build();
  }

  /** The configuration this consumer runs with. */
  public SqsConsumerConfig config() {
    return config;
  }

  /**
   * Checks the queue (and the dead-letter queue or the queue's {@code RedrivePolicy}), then starts
   * the poller, worker and timer threads.
   *
   * @throws IllegalStateException when already started or closed
   * @throws IdempotencyException when the queue does not exist or cannot be read, the dead-letter
   *     queue does not exist or is not of the same kind (FIFO/standard), or neither a dead-letter
   *     queue nor a {@code RedrivePolicy} is there to take dead letters
   */
  @Override
  public void start() {
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("consumer on " + config.queueUrl() + " was closed; create a new one");
      }
      if (started) {
        throw new IllegalStateException("consumer on " + config.queueUrl() + " already started");
      }
      Map<QueueAttributeName, String> attributes = queueAttributes(config.queueUrl(), "queue");
      fifo = isFifo(config.queueUrl(), attributes);
      String redrive = attributes.get(QueueAttributeName.REDRIVE_POLICY);
      Integer maxReceiveCount = DeadLetters.maxReceiveCount(redrive);
      int maxAttempts = pipeline.retryPolicy().maxAttempts();
      String dlqUrl = config.deadLetterQueueUrl();
      String dlqSource = "configured";
      if (dlqUrl == null) {
        if (redrive == null || redrive.isBlank()) {
          throw new IdempotencyException("queue " + config.queueUrl() + " has no RedrivePolicy and no"
              + " deadLetterQueueUrl is configured: dead-lettered messages would come back forever;"
              + " configure one of them");
        }
        String arn = DeadLetters.deadLetterTargetArn(redrive);
        dlqUrl = arn == null ? null : DeadLetters.queueUrlOf(sqs, arn);
        dlqSource = "the RedrivePolicy's target";
      }
      DeadLetters letters;
      if (dlqUrl != null) {
        Map<QueueAttributeName, String> dlq = queueAttributes(dlqUrl, "dead-letter queue");
        boolean dlqFifo = isFifo(dlqUrl, dlq);
        if (dlqFifo != fifo) {
          throw new IdempotencyException("dead-letter queue " + dlqUrl + " must be " + (fifo ? "a FIFO" : "a standard")
              + " queue like " + config.queueUrl() + ", but is " + (dlqFifo ? "FIFO" : "standard"));
        }
        letters = DeadLetters.explicit(sqs, dlqUrl, fifo, deletes, maximumMessageSize(dlqUrl, dlq));
      } else {
        LOG.warn("queue {}: the RedrivePolicy's dead-letter queue cannot be resolved, so dead letters are"
            + " handed back for SQS to move after maxReceiveCount receives, unchanged: their reason is only"
            + " logged; configure deadLetterQueueUrl to keep it", config.queueUrl());
        letters = DeadLetters.redrivePolicy(keeper, config.queueUrl());
      }
      if (maxReceiveCount != null && maxReceiveCount <= maxAttempts) {
        warnRedriveLimit(maxReceiveCount, maxAttempts, letters.viaRedrivePolicy());
      }
      LaneRunner runner = new LaneRunner(config, pipeline, keeper, ledger, deletes, letters, fifo, maxReceiveCount,
          stopping);
      lanes = runner;
      startThreads(runner);
      started = true;
      LOG.info("SQS consumer started: group '{}', {} queue {}, dead letters {}, max attempts {}{}",
          pipeline.consumerGroup(), fifo ? "FIFO" : "standard", config.queueName(),
          letters.viaRedrivePolicy() ? "via the queue's RedrivePolicy" : "to " + dlqUrl + " (" + dlqSource + ")",
          maxAttempts, maxReceiveCount == null ? "" : ", RedrivePolicy maxReceiveCount " + maxReceiveCount);
      LOG.debug("SQS consumer of group '{}': {}; {}", pipeline.consumerGroup(), config, pipeline);
    }
  }

  /**
   * A {@code RedrivePolicy} that can act before Idem: a failing message is dead-lettered by Idem
   * at the lower limit, but a message whose handler kills the process is dead-lettered by Idem
   * only on the receive after its {@code maxAttempts}-th death, before its handler runs — SQS
   * moves it first, without Idem's reason, unless {@code maxReceiveCount} is above
   * {@code maxAttempts}; and every death is a receive more for the messages received with it.
   */
  private void warnRedriveLimit(int maxReceiveCount, int maxAttempts, boolean viaRedrivePolicy) {
    String failures = maxReceiveCount < maxAttempts
        ? "a failing message is dead-lettered by Idem when its receive count reaches " + maxReceiveCount
            + " (with a reason" + (viaRedrivePolicy ? " only in the log" : "") + "), not after maxAttempts; "
        : "";
    LOG.warn("queue {} moves messages to its dead-letter queue after maxReceiveCount={} receives, not more"
        + " than the retry policy's maxAttempts={}: {}a message whose handler kills the process is moved by SQS"
        + " after {} deaths without Idem's reason (Idem dead-letters it, without running it, on the"
        + " receive after death number {}); set maxReceiveCount to at least {} (2 × maxAttempts: the"
        + " messages received with it are received again after each death)", config.queueUrl(), maxReceiveCount,
        maxAttempts, failures, maxReceiveCount, maxAttempts, 2 * maxAttempts);
  }

  /** The dead-letter queue's {@code MaximumMessageSize} (bytes), the SQS default when unreadable. */
  private static int maximumMessageSize(String url, Map<QueueAttributeName, String> attributes) {
    String size = attributes.get(QueueAttributeName.MAXIMUM_MESSAGE_SIZE);
    try {
      return size == null ? DeadLetterAttributes.MAX_MESSAGE_BYTES : Integer.parseInt(size.trim());
    } catch (NumberFormatException e) {
      LOG.warn("dead-letter queue {} has MaximumMessageSize '{}'; assuming {} bytes", url, size,
          DeadLetterAttributes.MAX_MESSAGE_BYTES);
      return DeadLetterAttributes.MAX_MESSAGE_BYTES;
    }
  }

  private void startThreads(LaneRunner runner) {
    String queue = config.queueName();
    AtomicInteger workerNumber = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(config.concurrency(), r -> {
      Thread t = new Thread(r, "idem-sqs-worker-" + queue + "-" + workerNumber.incrementAndGet());
      t.setDaemon(false);
      workerThreads.add(t);
      return t;
    });
    workers = pool;
    ScheduledExecutorService clock = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "idem-sqs-timer-" + queue);
      t.setDaemon(true);
      return t;
    });
    timer = clock;
    if (config.visibilityHeartbeat()) {
      long tick = clamp(config.visibilityTimeout().toMillis() / 10, 50, 1000);
      clock.scheduleWithFixedDelay(guarded("heartbeat", keeper::heartbeat), tick, tick, TimeUnit.MILLISECONDS);
    }
    if (!config.deleteBatchWindow().isZero()) {
      long tick = clamp(config.deleteBatchWindow().toMillis() / 4, 10, 250);
      clock.scheduleWithFixedDelay(guarded("delete flush", deletes::flushIfDue), tick, tick, TimeUnit.MILLISECONDS);
    }
    Receiver.Dispatch dispatch = config.maxBatchSize() > 1
        ? new BatchRunner(config, pipeline, runner, keeper, ledger, deletes, fifo, stopping)::runBatch
        : runner::runBatch;
    Receiver loop = new Receiver(config, sqs, fifo, keeper, ledger, dispatch, deletes, pool, stopping);
    receiver = loop;
    Thread thread = new Thread(loop, "idem-sqs-poll-" + queue);
    thread.setDaemon(false);
    thread.setUncaughtExceptionHandler((t, e) -> LOG.error("poller thread {} died", t.getName(), e));
    poller = thread;
    thread.start();
  }

  private static Runnable guarded(String what, Runnable task) {
    return () -> {
      try {
        task.run();
      } catch (RuntimeException e) {
        LOG.warn("SQS {} task failed: {}", what, e.toString(), e);
      }
    };
  }

  private static long clamp(long value, long min, long max) {
    return Math.max(min, Math.min(max, value));
  }

  private Map<QueueAttributeName, String> queueAttributes(String url, String what) {
    try {
      return sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.ALL)).attributes();
    } catch (QueueDoesNotExistException e) {
      throw new IdempotencyException(what + " " + url + " does not exist", e);
    } catch (SdkException e) {
      throw new IdempotencyException("could not read the attributes of " + what + " " + url + ": " + e.getMessage(), e);
    }
  }

  private static boolean isFifo(String url, Map<QueueAttributeName, String> attributes) {
    String flag = attributes.get(QueueAttributeName.FIFO_QUEUE);
    return flag != null ? Boolean.parseBoolean(flag) : url.endsWith(".fifo");
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  /**
   * Stops gracefully within {@link SqsConsumerConfig#shutdownTimeout()}: no new receives (one in
   * progress may run for up to {@code waitTime}), in-flight messages finish and are settled,
   * received messages that had not started are handed back (visibility 0), pending deletes are
   * flushed, and a client this consumer built is closed. Past the timeout, the running handlers
   * are interrupted: a handler that stops on it is not a failure ({@code RELEASED}): its message
   * is handed back (visibility 0) without a retry backoff or a dead letter, and close() waits a
   * few more seconds for that; messages still held then are handed back unacknowledged.
   * Idempotent.
   */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
      stopping.set(true);
    }
    long deadline = System.nanoTime() + config.shutdownTimeout().toNanos();
    Thread thread = poller;
    if (thread != null) {
      // the poller waits for its batch, so close() awaits the poller; past the timeout it
      // interrupts the workers (pool threads, which outlive a batch: not awaited themselves)
      List<Thread> poll = List.of(thread);
      if (!AdapterWorker.awaitAll(poll, deadline).isEmpty()) {
        // lanes not started yet still run and hand their messages back (stopping), so that wait
        // ends; an interrupted handler's message is released (visibility 0), not a failure
        LOG.warn("SQS consumer on {} did not stop within {}; interrupting its running handlers",
            config.queueName(), config.shutdownTimeout());
        workerThreads.forEach(Thread::interrupt);
        if (!AdapterWorker.awaitAll(poll, System.nanoTime() + AdapterWorker.AFTER_INTERRUPT.toNanos()).isEmpty()) {
          LOG.warn("SQS consumer on {}: its poller is still busy; interrupting it", config.queueName());
          AdapterWorker.interruptAndAwait(poll, POLLER_AFTER_INTERRUPT);
        }
      }
    }
    ExecutorService pool = workers;
    if (pool != null) {
      pool.shutdown();
      try {
        if (!pool.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          pool.shutdownNow();
        }
      } catch (InterruptedException e) {
        pool.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
    deletes.flush();
    ScheduledExecutorService clock = timer;
    if (clock != null) {
      clock.shutdownNow();
    }
    int left = keeper.heldCount();
    if (left > 0) {
      LOG.warn("SQS consumer on {} still held {} unsettled message(s) at shutdown; handing them back",
          config.queueName(), left);
      keeper.handBackAll();
    }
    if (ownsClient) {
      sqs.close();
    }
    if (started) {
      LOG.info("SQS consumer of group '{}' on {} stopped: {} deleted, {} delete(s) failed, {} skipped",
          pipeline.consumerGroup(), config.queueName(), deletes.deletedCount(), deletes.failedCount(),
          skippedCount());
    }
  }

  /**
   * True between a successful {@link #start()} and the beginning of {@link #close()}; false
   * once a worker or the poller met a {@link VirtualMachineError} (the consumer then stopped
   * receiving; call {@link #close()} to release its threads).
   */
  @Override
  public boolean isRunning() {
    return started && !stopping.get();
  }

  /**
   * For readiness probes: {@code connected} is true once {@link #start()} read the queue's
   * attributes, and false while the last {@code ReceiveMessage} failed (SQS unreachable, access
   * denied…; the poller tries again every {@code pollErrorBackoff}); {@code consuming} is the queue name while
   * running; {@code lastReceive} is when the last {@code ReceiveMessage} returned without an
   * error (empty or not); {@code heldForRetry} counts messages held in process — a FIFO message
   * waiting its retry backoff ahead of the rest of its group, or a message waiting out a store
   * outage; {@code store} is the pipeline's {@link IdempotentConsumer#storeHealth()}. A snapshot
   * from memory: no SQS or database call. Thread-safe.
   */
  @Override
  public ConsumerHealth health() {
    boolean running = isRunning();
    Receiver loop = receiver;
    LaneRunner runner = lanes;
    Instant last = loop == null ? null : loop.lastReceive();
    boolean connected = running && loop != null && !loop.lastReceiveFailed();
    return new ConsumerHealth(running, connected, running ? List.of(config.queueName()) : List.of(), last,
        runner == null ? 0 : runner.heldInProcess(), pipeline.storeHealth());
  }

  /** True once {@link #start()} found a FIFO queue. */
  public boolean isFifo() {
    return fifo;
  }

  long deletedCount() {
    return deletes.deletedCount();
  }

  long deleteFailures() {
    return deletes.failedCount();
  }

  long skippedCount() {
    LaneRunner runner = lanes;
    return runner == null ? 0 : runner.skippedCount();
  }

  @Override
  public String toString() {
    return "SqsIdempotentConsumer[group=" + pipeline.consumerGroup() + ", queue=" + config.queueUrl() + "]";
  }
}
