package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;

/**
 * Consumes one SQS queue (standard or FIFO) through an {@link IdempotentConsumer} pipeline,
 * deleting each message only after its store transaction ended.
 *
 * <p><b>Loop.</b> One poller thread long-polls {@code ReceiveMessage} ({@code WaitTimeSeconds},
 * {@code MaxNumberOfMessages}, the configured {@code VisibilityTimeout}, all message attributes
 * and all system attributes, among them {@code ApproximateReceiveCount}). The batch is split into
 * lanes — one per message on a standard queue, one per {@code MessageGroupId} on a FIFO queue, in
 * order — which run on {@code concurrency} worker threads; the next receive follows when the
 * batch is done and its deletes were flushed.
 *
 * <p><b>Visibility.</b> Every message this consumer holds (waiting its turn, in the handler, or
 * waiting for its batched delete) is extended back to a full visibility timeout with
 * {@code ChangeMessageVisibility} once it has used {@code heartbeatShare} of it, unless the
 * heartbeat is off. Before a message of a batch starts, its remaining visibility is checked: too
 * little left and it is extended (heartbeat on) or, when already run out, skipped without
 * touching it — SQS may already have handed it to another consumer, and the receipt handle this
 * consumer holds is no longer the current one.
 *
 * <p><b>Settling</b> ({@link SqsAcknowledgement}): ack = delete with this delivery's receipt
 * handle; retry = {@code ChangeMessageVisibility} to the backoff; dead letter = copy to the
 * configured dead-letter queue with reason attributes and delete, or — with no dead-letter queue
 * configured — hand it back so that the queue's {@code RedrivePolicy} moves it after
 * {@code maxReceiveCount} receives (SQS moves messages unchanged, so the reason is then only
 * logged; set {@code maxReceiveCount} to the retry policy's {@code maxAttempts}). The delivery
 * attempt is {@code ApproximateReceiveCount}.
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
 * up to six attributes). SQS allows 10 attributes and 256 KiB per message, so when they do not all
 * fit the reason is kept and the least important original attributes are left out, their names
 * listed in the attribute {@code idem-dropped-attributes} (kept first: {@code idem-body-encoding},
 * {@code idempotency-key}, CloudEvents {@code ce-}/{@code ce_} attributes); a body too large for
 * the reason beside it shortens the detail. On a FIFO dead-letter queue the copy keeps the
 * message group and uses the original {@code MessageId} as deduplication id, so a copy re-sent
 * after a crash within 5 minutes is dropped by SQS; a standard dead-letter queue may then hold
 * two copies. Without a dead-letter queue, the queue's {@code RedrivePolicy} must exist
 * ({@link #start()} checks); a message the pipeline gave up on is handed back (visibility 0)
 * until SQS moves it, unchanged, after {@code maxReceiveCount} receives.
 *
 * <p><b>FIFO.</b> A message that is retried (or could not be settled) stops its lane: the rest of
 * its group in the batch is handed back (visibility 0) and SQS, which delivers nothing more of a
 * group while one of its messages is in flight, returns them after it. Other groups go on. The
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
  private static final int GIVEN_UP_MEMORY = 10_000;
  /** How often a message held through a store outage checks for close and its visibility. */
  private static final Duration STORE_WAIT_SLICE = Duration.ofMillis(50);
  /** How long {@link #close()} waits for the handlers it interrupted past the shutdown timeout. */
  static final Duration AFTER_INTERRUPT = Duration.ofSeconds(5);

  private final SqsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final SqsClient sqs;
  private final boolean ownsClient;
  private final VisibilityKeeper keeper;
  private final DeleteBatcher deletes;
  private final long marginNanos;
  private final Object lifecycle = new Object();
  /** The worker pool's threads, for close() to interrupt handlers still running past its timeout. */
  private final Set<Thread> workerThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final AtomicLong skipped = new AtomicLong();
  /** Redrive mode: ids of messages the pipeline gave up on, handed back without processing. */
  private final Set<String> givenUp = Collections.newSetFromMap(Collections.synchronizedMap(
      new LinkedHashMap<>(16, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > GIVEN_UP_MEMORY;
        }
      }));

  private volatile boolean started;
  private volatile boolean stopping;
  private boolean closed;
  private boolean fifo;
  private @Nullable DeadLetters deadLetters;
  private @Nullable Thread poller;
  private @Nullable ExecutorService workers;
  private @Nullable ScheduledExecutorService timer;

  private SqsIdempotentConsumer(
      SqsConsumerConfig config, IdempotentConsumer<?> pipeline, SqsClient sqs, boolean ownsClient) {
    this.config = config;
    this.pipeline = pipeline;
    this.sqs = sqs;
    this.ownsClient = ownsClient;
    this.keeper = new VisibilityKeeper(sqs, config.queueUrl(), config.visibilityTimeout(), config.heartbeatShare());
    this.deletes = new DeleteBatcher(sqs, config.queueUrl(), config.deleteBatchWindow(), keeper);
    this.marginNanos = Math.min(Duration.ofSeconds(1).toNanos(), config.visibilityTimeout().toNanos() / 4);
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
      String dlqUrl = config.deadLetterQueueUrl();
      if (dlqUrl != null) {
        boolean dlqFifo = isFifo(dlqUrl, queueAttributes(dlqUrl, "dead-letter queue"));
        if (dlqFifo != fifo) {
          throw new IdempotencyException("dead-letter queue " + dlqUrl + " must be " + (fifo ? "a FIFO" : "a standard")
              + " queue like " + config.queueUrl() + ", but is " + (dlqFifo ? "FIFO" : "standard"));
        }
        deadLetters = DeadLetters.explicit(sqs, dlqUrl, fifo, deletes);
      } else {
        String redrive = attributes.get(QueueAttributeName.REDRIVE_POLICY);
        if (redrive == null || redrive.isBlank()) {
          throw new IdempotencyException("queue " + config.queueUrl() + " has no RedrivePolicy and no"
              + " deadLetterQueueUrl is configured: dead-lettered messages would come back forever;"
              + " configure one of them");
        }
        Integer maxReceiveCount = DeadLetters.maxReceiveCount(redrive);
        int maxAttempts = pipeline.retryPolicy().maxAttempts();
        if (maxReceiveCount != null && maxReceiveCount != maxAttempts) {
          LOG.warn("queue {} moves messages to its dead-letter queue after maxReceiveCount={} receives,"
              + " but the retry policy allows maxAttempts={}: set them equal so that every attempt is"
              + " used and none is wasted", config.queueUrl(), maxReceiveCount, maxAttempts);
        }
        deadLetters = DeadLetters.redrivePolicy(keeper, config.queueUrl());
      }
      startThreads();
      started = true;
      LOG.info("SQS consumer started: group '{}', {} queue {}, dead letters {}, max attempts {}",
          pipeline.consumerGroup(), fifo ? "FIFO" : "standard", config.queueName(),
          dlqUrl == null ? "via the queue's RedrivePolicy" : "to " + dlqUrl, pipeline.retryPolicy().maxAttempts());
      LOG.debug("SQS consumer of group '{}': {}; {}", pipeline.consumerGroup(), config, pipeline);
    }
  }

  private void startThreads() {
    String queue = config.queueName();
    AtomicInteger workerNumber = new AtomicInteger();
    workers = Executors.newFixedThreadPool(config.concurrency(), r -> {
      Thread t = new Thread(r, "idem-sqs-worker-" + queue + "-" + workerNumber.incrementAndGet());
      t.setDaemon(false);
      workerThreads.add(t);
      return t;
    });
    timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "idem-sqs-timer-" + queue);
      t.setDaemon(true);
      return t;
    });
    if (config.visibilityHeartbeat()) {
      long tick = clamp(config.visibilityTimeout().toMillis() / 10, 50, 1000);
      timer.scheduleWithFixedDelay(guarded("heartbeat", keeper::heartbeat), tick, tick, TimeUnit.MILLISECONDS);
    }
    if (!config.deleteBatchWindow().isZero()) {
      long tick = clamp(config.deleteBatchWindow().toMillis() / 4, 10, 250);
      timer.scheduleWithFixedDelay(guarded("delete flush", deletes::flushIfDue), tick, tick, TimeUnit.MILLISECONDS);
    }
    Thread thread = new Thread(this::pollLoop, "idem-sqs-poll-" + queue);
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

  // ---- the loop --------------------------------------------------------------------------------

  private void pollLoop() {
    while (!stopping) {
      List<Delivery> batch = new ArrayList<>();
      try {
        pollOnce(batch);
      } catch (VirtualMachineError e) {
        pollerFailed(batch, e);
        throw e;
      } catch (Throwable e) {
        // a bug, a client or SDK failure that is no SdkException: never the end of the poller,
        // which would leave what it took hidden by the heartbeat for hours
        List<Delivery> notStarted = notStarted(batch);
        LOG.error("polling {} failed: {}; {} received message(s) that had not started handed back;"
            + " polling again in {} ms", config.queueName(), e.toString(), notStarted.size(),
            config.pollErrorBackoff().toMillis(), e);
        keeper.handBack(notStarted);
        if (!stopping) {
          pause(config.pollErrorBackoff());
        }
      }
    }
    deletes.flush();
  }

  /** One receive and its batch; each message taken is added to {@code batch} as soon as it is held. */
  private void pollOnce(List<Delivery> batch) {
    long sent = System.nanoTime();
    List<Message> messages;
    try {
      messages = receive();
    } catch (SdkException e) {
      if (!stopping) {
        LOG.warn("ReceiveMessage on {} failed: {}; trying again in {} ms", config.queueName(), e.toString(),
            config.pollErrorBackoff().toMillis());
        pause(config.pollErrorBackoff());
      }
      return;
    }
    if (messages.isEmpty()) {
      return;
    }
    Instant receivedAt = Instant.now();
    long visibleUntil = sent + config.visibilityTimeout().toNanos();
    for (Message message : messages) {
      Delivery delivery = new Delivery(SqsInboundMessage.of(config.queueName(), message, receivedAt), visibleUntil);
      keeper.hold(delivery);
      batch.add(delivery);
    }
    if (stopping) {
      keeper.handBack(batch);
      return;
    }
    runBatch(batch);
  }

  /** The messages of {@code batch} still held that no lane took. */
  private static List<Delivery> notStarted(List<Delivery> batch) {
    return batch.stream().filter(d -> !d.started && d.held()).toList();
  }

  /**
   * A {@link VirtualMachineError} on the poller thread: stop extending what it received and no
   * lane took, without calling SQS, so that SQS delivers it again when its visibility runs out;
   * and stop the consumer.
   */
  private void pollerFailed(List<Delivery> batch, VirtualMachineError error) {
    List<Delivery> notStarted = notStarted(batch);
    notStarted.forEach(keeper::forget);
    stopping = true;
    LOG.error("SQS consumer on {} stops: {} on its poller thread; {} received message(s) that had not"
        + " started reappear when their visibility runs out", config.queueName(), error, notStarted.size());
  }

  private List<Message> receive() {
    ReceiveMessageRequest.Builder request = ReceiveMessageRequest.builder()
        .queueUrl(config.queueUrl())
        .maxNumberOfMessages(config.maxMessages())
        .waitTimeSeconds((int) config.waitTime().getSeconds())
        .visibilityTimeout((int) config.visibilityTimeout().getSeconds())
        .messageAttributeNames("All")
        .messageSystemAttributeNames(MessageSystemAttributeName.ALL);
    if (fifo) {
      // a receive the SDK retries after a lost response gets the same messages back instead of
      // leaving their groups locked until the visibility timeout
      request.receiveRequestAttemptId(UUID.randomUUID().toString());
    }
    return sqs.receiveMessage(request.build()).messages();
  }

  private void runBatch(List<Delivery> deliveries) {
    List<List<Delivery>> lanes = lanes(deliveries);
    ExecutorService pool = Objects.requireNonNull(workers);
    List<CompletableFuture<?>> running = new ArrayList<>(lanes.size());
    try {
      for (List<Delivery> lane : lanes) {
        running.add(CompletableFuture.runAsync(() -> runLane(lane), pool));
      }
    } finally {
      // even when a lane could not be submitted: no lane may still run when the poller hands
      // back what was not started
      try {
        CompletableFuture.allOf(running.toArray(new CompletableFuture<?>[0])).join();
      } catch (RuntimeException e) {
        LOG.error("a lane of {} failed unexpectedly: {}", config.queueName(), e.toString(), e);
      }
    }
    deletes.flush();
  }

  private List<List<Delivery>> lanes(List<Delivery> deliveries) {
    List<List<Delivery>> lanes = new ArrayList<>();
    if (!fifo) {
      deliveries.forEach(d -> lanes.add(List.of(d)));
      return lanes;
    }
    Map<String, List<Delivery>> groups = new LinkedHashMap<>();
    for (Delivery d : deliveries) {
      String group = d.message.messageGroupId();
      groups.computeIfAbsent(group == null ? "" : group, g -> new ArrayList<>()).add(d);
    }
    lanes.addAll(groups.values());
    return lanes;
  }

  private void runLane(List<Delivery> lane) {
    for (int i = 0; i < lane.size(); i++) {
      Delivery delivery = lane.get(i);
      if (stopping) {
        keeper.handBack(lane.subList(i, lane.size()));
        return;
      }
      delivery.started = true;
      boolean goOn;
      try {
        goOn = ready(delivery) ? process(delivery) : !fifo;
      } catch (VirtualMachineError e) {
        fail(lane.subList(i, lane.size()), e);
        throw e;
      } catch (Throwable e) {
        // a failed acknowledgement, or an Error the pipeline does not catch (from a listener…):
        // this message's failure, never the lane's
        release(delivery, e);
        goOn = !fifo;
      }
      if (!goOn) {
        // FIFO: nothing behind a message of its group may overtake it
        keeper.handBack(lane.subList(i + 1, lane.size()));
        return;
      }
    }
  }

  /** Before a message starts: enough visibility left? Extend it or skip it. */
  private boolean ready(Delivery delivery) {
    long now = System.nanoTime();
    long remaining = delivery.remainingNanos(now);
    if (remaining <= marginNanos) {
      skipped.incrementAndGet();
      keeper.forget(delivery);
      LOG.info("{} on {} waited too long for its turn (visibility {} ms from running out); skipped and"
          + " left for redelivery", delivery, config.queueName(), remaining / 1_000_000);
      return false;
    }
    if (config.visibilityHeartbeat() && keeper.due(delivery, now) && !keeper.extend(delivery)) {
      skipped.incrementAndGet();
      keeper.forget(delivery);
      return false;
    }
    return true;
  }

  /** Runs the pipeline on one message; false when the rest of its FIFO group must wait. */
  private boolean process(Delivery delivery) {
    DeadLetters letters = Objects.requireNonNull(deadLetters);
    if (letters.viaRedrivePolicy()
        && (givenUp.contains(delivery.messageId())
            || delivery.message.deliveryAttempt() > pipeline.retryPolicy().maxAttempts())) {
      LOG.debug("{} was given up already; handed back for the RedrivePolicy", delivery);
      keeper.handBack(List.of(delivery));
      return false;
    }
    ProcessingOutcome outcome;
    while (true) {
      SqsAcknowledgement acknowledgement = new SqsAcknowledgement(delivery, keeper, deletes, letters);
      outcome = runPipeline(delivery, acknowledgement);
      Duration wait = acknowledgement.heldForStore();
      if (wait == null) {
        break;
      }
      if (!holdForStore(delivery, wait)) {
        return false;
      }
    }
    switch (outcome) {
      case RETRY:
      case RELEASED: // handed back at shutdown: nothing more of this lane
        return false;
      case DEAD_LETTERED:
      case CONFLICT:
        if (letters.viaRedrivePolicy()) {
          givenUp.add(delivery.messageId());
          return false;
        }
        return true;
      default:
        return true;
    }
  }

  /**
   * The pipeline on {@code delivery}. Something other than a {@link VirtualMachineError} thrown
   * after the acknowledgement settled it (by a listener's {@code onOutcome}, say) is only logged:
   * the message stays as SQS was told — its delete may still be queued — and never gets its
   * visibility changed.
   *
   * @return the outcome, or what the acknowledgement settled when the pipeline threw afterwards
   */
  private ProcessingOutcome runPipeline(Delivery delivery, SqsAcknowledgement acknowledgement) {
    try {
      return pipeline.process(delivery.message, acknowledgement);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      ProcessingOutcome settled = acknowledgement.settled();
      if (settled == null) {
        throw e;
      }
      LOG.error("{} on {} was settled ({}), then processing threw; it stays settled", delivery,
          config.queueName(), settled, e);
      return settled;
    }
  }

  /**
   * Something other than a {@link VirtualMachineError} was thrown while {@code delivery} was
   * processed, before its acknowledgement settled it: unless it was left to reappear (a failed
   * delete or visibility change, a skipped message), stop its heartbeat and have SQS deliver it
   * again after the retry backoff.
   */
  private void release(Delivery delivery, Throwable failure) {
    if (!delivery.held()) {
      LOG.error("could not settle {} on {}; it reappears when its visibility runs out", delivery,
          config.queueName(), failure);
      return;
    }
    Duration delay = pipeline.retryPolicy().backoff(delivery.message.deliveryAttempt());
    LOG.error("could not settle {} on {}; released, it comes back in {} ms", delivery, config.queueName(),
        delay.toMillis(), failure);
    try {
      keeper.changeVisibility(delivery, delay);
    } catch (RuntimeException e) {
      LOG.warn("{}; it reappears when its visibility runs out", e.getMessage());
    }
  }

  /**
   * A {@link VirtualMachineError} (out of memory…) on a lane: stop extending the message in hand
   * and the rest of its lane, without calling SQS, so that they reappear when their visibility
   * runs out; and stop the consumer.
   */
  private void fail(List<Delivery> rest, VirtualMachineError error) {
    rest.forEach(keeper::forget);
    stopping = true; // no more receives; the other lanes hand back what they have not started
    LOG.error("SQS consumer on {} stops: {} while processing {}; it and the {} message(s) behind it"
        + " reappear when their visibility runs out", config.queueName(), error, rest.get(0), rest.size() - 1);
  }

  /**
   * Keeps {@code delivery} hidden for {@code wait} after a store outage, on this worker thread (the
   * next receive waits for the batch, so no more messages are taken while the store is down).
   * The heartbeat extends it; with the heartbeat off this extends it itself.
   *
   * @return true to run it again; false when it was handed back (closing) or could not be kept
   *     (its visibility could not be extended: it reappears on its own)
   */
  private boolean holdForStore(Delivery delivery, Duration wait) {
    long until = System.nanoTime() + wait.toNanos();
    while (true) {
      if (stopping) {
        keeper.handBack(List.of(delivery));
        return false;
      }
      long now = System.nanoTime();
      if (!delivery.held()) {
        return false;
      }
      if (!config.visibilityHeartbeat() && keeper.due(delivery, now) && !keeper.extend(delivery)) {
        skipped.incrementAndGet();
        keeper.forget(delivery);
        return false;
      }
      long left = until - now;
      if (left <= 0) {
        return ready(delivery);
      }
      try {
        TimeUnit.NANOSECONDS.sleep(Math.min(left, STORE_WAIT_SLICE.toNanos()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        keeper.handBack(List.of(delivery));
        return false;
      }
    }
  }

  private void pause(Duration duration) {
    try {
      Thread.sleep(duration.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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
      stopping = true;
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
          skipped.get());
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
    return started && !stopping;
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
    return skipped.get();
  }

  @Override
  public String toString() {
    return "SqsIdempotentConsumer[group=" + pipeline.consumerGroup() + ", queue=" + config.queueUrl() + "]";
  }
}
