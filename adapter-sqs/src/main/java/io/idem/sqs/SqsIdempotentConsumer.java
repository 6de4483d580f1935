package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
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
 * Consumes one SQS queue (standard or FIFO) through an {@link IdempotentConsumer} pipeline,
 * deleting each message only after its store transaction ended.
 *
 * <p><b>Loop.</b> One poller thread ({@link Receiver}) long-polls {@code ReceiveMessage}
 * ({@code WaitTimeSeconds}, {@code MaxNumberOfMessages}, the configured {@code VisibilityTimeout},
 * all message attributes and all system attributes, among them {@code ApproximateReceiveCount}).
 * The batch is split into lanes ({@link LaneRunner}) — one per message on a standard queue, one
 * per {@code MessageGroupId} on a FIFO queue, in order — which run on {@code concurrency} worker
 * threads; the next receive follows when the batch is done and its deletes were flushed.
 *
 * <p><b>Batch mode</b> ({@link SqsConsumerConfig#maxBatchSize()} above 1; {@link BatchRunner}):
 * instead of lanes, the receive is processed with {@link IdempotentConsumer#processBatch} — on a
 * standard queue one {@code UNORDERED} batch of up to {@code maxBatchSize}, on a FIFO queue one
 * {@code ORDERED} batch per message group — one COMMIT per batch, then the batch's deletes in one
 * {@code DeleteMessageBatch}. A failing message is redone alone and takes the usual retry or
 * dead-letter path; on a FIFO queue the rest of its group stays hidden behind it without an
 * attempt being counted, as below.
 *
 * <p><b>Attempts</b> are handler runs, not receives (issue 11): the delivery attempt is
 * {@code ApproximateReceiveCount} less the receives this consumer ended without a handler run
 * (handed back unstarted, skipped near expiry, released at close), plus the retries it ran in
 * process ({@link AttemptLedger}). A receive with a count above 1 whose earlier receive this JVM
 * does not know the end of (never seen, or its handler started without an outcome) is flagged
 * {@link SqsInboundMessage#unaccountedRedelivery()}: the handler may have killed the process, so
 * the pipeline counts the attempt in the store before running it, and dead-letters a message that
 * keeps killing the process after at most {@code maxAttempts} deaths (docs/FAILURES.md, "Attempts
 * that survive the process"). The pending batched deletes are sent before such a message runs,
 * and in batch mode it runs alone. {@link #start()} warns when the queue's {@code maxReceiveCount}
 * is not above {@code maxAttempts}: SQS would move such a message first, without Idem's reason.
 *
 * <p><b>Visibility.</b> Every message this consumer holds (waiting its turn, in the handler, or
 * waiting for its batched delete) is extended back to a full visibility timeout with
 * {@code ChangeMessageVisibility} once it has used {@code heartbeatShare} of it, unless the
 * heartbeat is off. Before a message of a batch starts, its remaining visibility is checked: too
 * little left and it is extended (heartbeat on) — SQS refuses that when the receipt handle is no
 * longer the current one — or skipped (heartbeat off, or the extension refused) and left to
 * reappear, which is not counted as an attempt.
 *
 * <p><b>Settling</b> ({@link SqsAcknowledgement}): ack = delete with this delivery's receipt
 * handle; retry = {@code ChangeMessageVisibility} to the backoff (FIFO, with the rest of the group
 * behind it in the batch: in process); dead letter = copy with reason attributes to the configured
 * dead-letter queue, or else to the target of the queue's {@code RedrivePolicy}, and delete. Only
 * when that target cannot be resolved is the message handed back for the {@code RedrivePolicy} to
 * move unchanged (the reason is then only logged). A retry that would leave the message for the
 * {@code RedrivePolicy} (its receive count reached {@code maxReceiveCount}) dead-letters it instead,
 * with a reason: Idem dead-letters at the lower of {@code maxAttempts} and {@code maxReceiveCount}.
 *
 * <p><b>Store outages.</b> When the processed-events store is unavailable the message is not
 * handed back: it stays hidden (kept by the heartbeat) while the worker waits for the pipeline's
 * backoff, then runs through the pipeline again, as often as it takes. It is never received
 * again meanwhile, so its {@code ApproximateReceiveCount} stays where it was and a
 * {@code RedrivePolicy} cannot move a good message to the dead-letter queue during an outage. The
 * worker and the batch wait with it, so no new messages are received while the store is down.
 *
 * <p><b>Dead letters.</b> With {@link SqsConsumerConfig#deadLetterQueueUrl()} set, the copy keeps
 * the original body and attributes and adds the reason ({@link io.idem.DeadLetterReason#toHeaders()},
 * up to six attributes, characters SQS refuses replaced). SQS allows 10 attributes per message and
 * the dead-letter queue's {@code MaximumMessageSize} (read at start; 256 KiB by default, up to
 * 1 MiB), so when they do not all fit the reason is kept and the least important original attributes are left out, their names
 * listed in the attribute {@code idem-dropped-attributes} (kept first: {@code idem-body-encoding},
 * {@code idempotency-key}, CloudEvents {@code ce-}/{@code ce_} attributes); a body too large for
 * the reason beside it shortens the detail. On a FIFO dead-letter queue the copy keeps the
 * message group and uses the original {@code MessageId} as deduplication id, so a copy re-sent
 * after a crash within 5 minutes is dropped by SQS; a standard dead-letter queue may then hold
 * two copies. Without a dead-letter queue, the queue's {@code RedrivePolicy} must exist
 * ({@link #start()} checks). A copy SQS refuses leaves the message in the queue: reported at ERROR
 * once per message (then WARN), it comes back after the retry backoff and is tried again.
 *
 * <p><b>FIFO.</b> A message retried while the rest of its group waits behind it in the batch is
 * retried in process: it and the group stay hidden, the worker waits the backoff and runs it again
 * as the next attempt, so the rest of the group is neither received again nor counted toward a
 * {@code RedrivePolicy}. A message that could not be settled stops its lane: the rest of its group
 * in the batch is handed back (visibility 0, not counted as attempts) and SQS, which delivers
 * nothing more of a group while one of its messages is in flight, returns them after it. Other
 * groups go on. The
 * idempotency key comes from the message attributes (by default the {@code idempotency-key}
 * attribute), never from {@code MessageDeduplicationId}: SQS drops a re-publish with the same
 * deduplication id within 5 minutes but not after, and a legitimate re-publish must be decided by
 * the store, not by that window.
 *
 * <p><b>Failures.</b> Anything thrown out of processing a message (a failed acknowledgement, an
 * {@code Error} from a listener…) is logged as an error, and the lane goes on. Thrown after the
 * acknowledgement settled the message (its delete sent or queued for the next batch, its
 * visibility changed for a retry or the {@code RedrivePolicy}, its dead-letter copy sent), it
 * changes nothing: the message is never touched again, and a FIFO lane goes on as the settlement
 * says. Thrown before, it is that message's failure (on a FIFO queue, the rest of the group is
 * handed back as after a retry): unless the message was left to reappear (a delete or
 * visibility change that failed), its heartbeat stops and {@code ChangeMessageVisibility} sets
 * it to the retry backoff. Anything else thrown on the poller thread (other than the SDK's own
 * {@code SdkException}, retried after {@code pollErrorBackoff}) is logged as an error, the
 * messages of that batch that had not started are handed back (visibility 0), and polling goes
 * on after {@code pollErrorBackoff}. Only a {@link VirtualMachineError} (out of memory…) stops the
 * consumer, logged as an error: the message in hand and the rest of its lane (or, on the poller
 * thread, the messages of the batch that had not started) are no longer extended, not deleted,
 * and reappear when their visibility runs out; no more messages are received and
 * {@link #isRunning()} turns false.
 *
 * <p><b>Close.</b> {@link #close()} stops receiving (an in-progress long poll is allowed to
 * finish, so keep {@code waitTime} below {@code shutdownTimeout}), lets in-flight messages finish
 * and settle, hands back received messages that had not started (and messages waiting through a
 * store outage), flushes pending deletes, then
 * closes the client if this consumer built it.
 *
 * <p>Thread-safe. The {@link SqsClient} is shared by this consumer's threads (the SDK documents it
 * as thread-safe).
 */
public final class SqsIdempotentConsumer implements BrokerConsumer {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);
  /** How long {@link #close()} waits for the handlers it interrupted past the shutdown timeout. */
  static final Duration AFTER_INTERRUPT = Duration.ofSeconds(5);

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
      join(thread, deadline);
      if (thread.isAlive()) {
        // past the timeout the poller waits for its batch: interrupt the running handlers only.
        // Lanes not started yet still run and hand their messages back (stopping), so that wait
        // ends; an interrupted handler's message is released (visibility 0), not a failure
        LOG.warn("SQS consumer on {} did not stop within {}; interrupting its running handlers",
            config.queueName(), config.shutdownTimeout());
        workerThreads.forEach(Thread::interrupt);
        join(thread, System.nanoTime() + AFTER_INTERRUPT.toNanos());
      }
      if (thread.isAlive()) {
        LOG.warn("SQS consumer on {}: its poller is still busy; interrupting it", config.queueName());
        thread.interrupt();
        join(thread, System.nanoTime() + Duration.ofSeconds(2).toNanos());
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

  private static void join(Thread thread, long deadlineNanos) {
    try {
      long left = deadlineNanos - System.nanoTime();
      if (left > 0) {
        TimeUnit.NANOSECONDS.timedJoin(thread, left);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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
