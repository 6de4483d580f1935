package io.idem.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import io.idem.BatchOrder;
import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageRun;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.AdapterWorker;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes one RabbitMQ queue with manual acknowledgements and feeds every delivery through an
 * {@link IdempotentConsumer} pipeline; a delivery is acked only after its store transaction
 * committed (see {@link RabbitAcknowledgement} for ack, retry and dead-letter).
 *
 * <h2>Threads and channels</h2>
 *
 * One connection with a consuming channel ({@code basicQos(prefetch)}, {@code autoAck=false}),
 * and a second connection ({@code <connectionName>:dead-letters}) with a publisher-confirm channel
 * for dead letters: RabbitMQ blocks publishing connections during a memory or disk alarm, and the
 * consuming connection, which never publishes, must go on acking. The client's dispatch thread only hands
 * deliveries to a local buffer; {@link RabbitConsumerConfig#concurrency()} worker threads run the
 * pipeline; a single settler thread per connection performs every ack, nack and dead-letter
 * publish. Heartbeats run on the client's own I/O thread, which nothing here blocks. Worker
 * threads are not daemons: {@link #close()} the consumer (it is {@link AutoCloseable}).
 *
 * <h2>Batches</h2>
 *
 * With {@link RabbitConsumerConfig#maxBatchSize()} above 1 — the default, {@value
 * RabbitConsumerConfig#DEFAULT_MAX_BATCH_SIZE}; {@code maxBatchSize(1)} is per-message mode, one
 * transaction and one ack per delivery, with runs — a worker that takes a delivery also
 * takes the deliveries buffered behind it (up to {@code maxBatchSize}, never more than the
 * prefetch window holds; when fewer are there it waits at most 5 ms for more, once), all of one
 * channel, and runs them through {@link IdempotentConsumer#processBatch} with {@link BatchOrder#UNORDERED}
 * — competing consumers keep no order, so a retried message holds up nobody. One transaction, one
 * multi-row claim, one COMMIT; then each delivery is settled through its own {@link
 * RabbitAcknowledgement} as in per-message mode, except that the acks of the batch go to the
 * channel's settler thread together, once the batch is done: one {@code basicAck(tag,
 * multiple=true)} for those whose tags are exactly the channel's lowest unsettled ones (the usual
 * case with one worker and nothing held), one {@code basicAck(tag, multiple=false)} for each of
 * the others — tags of other workers' batches and of deliveries held for a retry backoff, a store
 * outage or a return interleave with a batch's tags on the same channel, and a multiple ack never
 * covers them ({@link BatchAcks}). When
 * the batch's transaction fails because of one message, the pipeline redoes it message by message:
 * the others are applied once and acked, the failing one is rejected with requeue (an attempt),
 * as in per-message mode. A store outage during a batch holds every delivery of it, unacked and
 * not counted, and runs each again after the backoff. A lost channel voids the whole batch's tags:
 * RabbitMQ requeues them, and the store deduplicates what was committed.
 *
 * <h2>Losing the connection or channel</h2>
 *
 * The client's automatic recovery is switched off (also on a {@link ConnectionFactory} passed to
 * {@link #create(RabbitConsumerConfig, IdempotentConsumer, ConnectionFactory)}, which is copied):
 * recovery would hand deliveries of the new channel and acks meant for the old one to the same
 * {@code Channel} object. Instead, when the connection or either channel closes, that whole
 * connection is abandoned: deliveries received on it are not settled any more (RabbitMQ requeued
 * them; an in-flight handler still commits, and its redelivery is acked as a duplicate), and after
 * {@link RabbitConsumerConfig#recoveryInterval()} a new connection is opened, the topology checked
 * again, and consumption resumes — retried every interval until it succeeds or {@link #close()}.
 *
 * <h2>Failed settlement and failures in processing</h2>
 *
 * When settling fails on a live channel (the dead-letter copy was not confirmed or routed
 * nowhere), or anything else escapes the pipeline unsettled — an {@link Error} from an
 * {@link io.idem.IdempotencyListener} or a key extractor, which the pipeline does not catch — the
 * error is logged at ERROR with the delivery, and the delivery is returned to the queue with
 * {@code basicNack(requeue=true)} after {@link RabbitConsumerConfig#recoveryInterval()}: it is
 * neither acked, dropped nor held for ever, and comes back until it can be settled (a delivery
 * settled before the throw is left as it is, and so is one whose ack was handed to the settler
 * thread, even when the wait for it was interrupted: see {@link RabbitAcknowledgement}). The
 * worker carries on with the next delivery.
 *
 * <p>The exception is a {@link VirtualMachineError} (out of memory, a stack overflow, an internal
 * VM error), which is not swallowed: the delivery is returned at once (best effort; closing the
 * connection returns it too), the consumer is marked failed and the worker thread ends with the
 * error. A worker also ends when it is interrupted while it waits for a delivery; an interrupt
 * flag that processing leaves set while the consumer is not closing (a handler restoring an
 * interrupt it caught) is cleared with a WARN instead, so that it neither ends the worker nor
 * fails the next delivery's transaction or ack. A worker that ends for any reason before {@link #close()} makes {@link #isRunning()}
 * {@code false} for good and is logged at ERROR; the other workers go on, but the consumer should
 * be closed and replaced. When no worker is left, the consumer stops consuming: it closes its
 * connection, so that RabbitMQ requeues at once every delivery it held (prefetched ones included)
 * and sends new ones to the queue's other consumers, and it does not reconnect. That is logged at
 * ERROR once; {@link #close()} is still needed to release the rest.
 *
 * <h2>Closing</h2>
 *
 * {@link #close()} cancels the consumer ({@code basicCancel}), lets in-flight deliveries finish
 * and settle (committed ones acked), leaves prefetched deliveries that were not started
 * unacknowledged, then closes the connection so that RabbitMQ returns them to the queue — all
 * within {@link RabbitConsumerConfig#shutdownTimeout()}. A handler still running then is
 * interrupted: a handler that stops on it is not a failure ({@link ProcessingOutcome#RELEASED}),
 * its delivery is returned with {@code basicNack(requeue=true)} — not an attempt, and on RabbitMQ
 * 4.3+ not counted toward a quorum queue's delivery limit — and its worker stops; close() waits a
 * few more seconds for that before closing the connection. Retries waiting for their backoff, and
 * deliveries held through a store outage, are returned at once.
 *
 * <p>Thread-safe: {@link #start()}, {@link #close()} and {@link #isRunning()} may be called from
 * any thread. Logs under {@code io.idem.rabbitmq}.
 */
public final class RabbitIdempotentConsumer implements BrokerConsumer {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitIdempotentConsumer.class);
  private static final Duration POLL = Duration.ofMillis(100);
  /**
   * How long a worker whose batch is not full waits for more deliveries: {@value
   * #BATCH_LINGER_MILLIS} ms, once per batch. RabbitMQ pushes a prefetch window one delivery at a
   * time as acks free its slots; without the wait a worker takes the first one or two of them as a
   * batch (measured: 301 against 641 messages/s at maxBatchSize 10, docs/BROKERS.md).
   */
  static final long BATCH_LINGER_MILLIS = 5;
  static final Duration BATCH_LINGER = Duration.ofMillis(BATCH_LINGER_MILLIS);

  private enum State { NEW, RUNNING, CLOSED }

  private final RabbitConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final ConnectionFactory factory;
  private final DeliveryAttempts attempts = new DeliveryAttempts(DeliveryAttempts.CAPACITY);
  private final LinkedBlockingQueue<Delivery> buffer = new LinkedBlockingQueue<>();
  private final AtomicLong generations = new AtomicLong();
  private final AtomicInteger liveWorkers = new AtomicInteger();
  private final List<Thread> workers = new ArrayList<>();
  private final Object lifecycle = new Object();
  /** Orders publishing a reconnected session against {@code stopping}/{@code abandoned}. */
  private final Object sessionSwap = new Object();
  private volatile State state = State.NEW;
  private volatile boolean stopping;
  private volatile boolean failed;
  /** No worker is left: the session is closed (or about to be) and never replaced. */
  private volatile boolean abandoned;
  private volatile @Nullable Session session;
  private volatile @Nullable Instant lastDelivery;
  private @Nullable ScheduledExecutorService supervisor;

  private RabbitIdempotentConsumer(
      RabbitConsumerConfig config, IdempotentConsumer<?> pipeline, ConnectionFactory factory) {
    this.config = config;
    this.pipeline = pipeline;
    this.factory = factory;
  }

  /**
   * A consumer connecting to {@link RabbitConsumerConfig#uri()}. Not started.
   *
   * @throws IllegalArgumentException when the URI cannot be used
   */
  public static RabbitIdempotentConsumer create(RabbitConsumerConfig config, IdempotentConsumer<?> pipeline) {
    Objects.requireNonNull(config, "config");
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(config.uri());
    } catch (Exception e) {
      throw new IllegalArgumentException("uri cannot be used: " + e.getMessage(), e);
    }
    return create(config, pipeline, factory);
  }

  /**
   * A consumer connecting with a copy of {@code factory} (host, credentials, TLS, heartbeat, …;
   * {@link RabbitConsumerConfig#uri()} is ignored). The copy has automatic and topology recovery
   * switched off: the adapter recovers itself, see the class description. Not started.
   */
  public static RabbitIdempotentConsumer create(
      RabbitConsumerConfig config, IdempotentConsumer<?> pipeline, ConnectionFactory factory) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(pipeline, "pipeline");
    ConnectionFactory copy = Objects.requireNonNull(factory, "factory").clone();
    copy.setAutomaticRecoveryEnabled(false);
    copy.setTopologyRecoveryEnabled(false);
    return new RabbitIdempotentConsumer(config, pipeline, copy);
  }

  /**
   * Connects, declares or verifies the topology, and starts consuming. Logs the mode (batches of
   * up to {@link RabbitConsumerConfig#maxBatchSize()}, or per message) and the prefetch at INFO,
   * and a WARN, once, when the prefetch is below {@code maxBatchSize} — an explicit {@link
   * RabbitConsumerConfig.Builder#prefetch(int) prefetch(n)}, kept as given: no batch can then be
   * larger than {@code n}.
   *
   * @throws IllegalStateException when already started or closed
   * @throws IdempotencyException when RabbitMQ cannot be reached or the topology is refused (the
   *     queue or its dead-letter exchange missing, the queue's arguments differ from the
   *     configuration, a quorum queue with a delivery limit and no dead-letter exchange); the
   *     consumer is then closed
   */
  @Override
  public void start() {
    synchronized (lifecycle) {
      if (state != State.NEW) {
        throw new IllegalStateException("consumer of " + config.queue() + " is " + state + ", not NEW");
      }
      ScheduledThreadPoolExecutor recovery =
          new ScheduledThreadPoolExecutor(1, r -> daemon(r, "idem-rabbit-recover-" + config.queue()));
      recovery.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
      supervisor = recovery;
      try {
        session = openSession();
      } catch (IdempotencyException | IOException | TimeoutException e) {
        state = State.CLOSED;
        stopping = true;
        recovery.shutdownNow();
        throw e instanceof IdempotencyException idem ? idem
            : new IdempotencyException("could not connect to RabbitMQ for queue '" + config.queue() + "': " + e, e);
      }
      checkDeliveryLimit(Objects.requireNonNull(session).serverVersion());
      liveWorkers.set(config.concurrency());
      for (int i = 0; i < config.concurrency(); i++) {
        Thread worker = new Thread(this::work, "idem-rabbit-worker-" + config.queue() + "-" + i);
        workers.add(worker);
        worker.start();
      }
      state = State.RUNNING;
      LOG.info("RabbitMQ consumer started: group '{}', queue {}, {} workers, {}, prefetch {}, max attempts {}",
          pipeline.consumerGroup(), config.queue(), config.concurrency(),
          config.maxBatchSize() == 1 ? "per message" : "batches of up to " + config.maxBatchSize(),
          config.prefetch(), pipeline.retryPolicy().maxAttempts());
      if (config.prefetch() < config.maxBatchSize()) {
        LOG.warn("RabbitMQ consumer of {}: prefetch {} is below maxBatchSize {}, so no batch is larger than {}"
            + " deliveries; leave prefetch unset for max({}, 2 x maxBatchSize), or set maxBatchSize({})",
            config.queue(), config.prefetch(), config.maxBatchSize(), config.prefetch(),
            RabbitConsumerConfig.DEFAULT_PREFETCH, config.prefetch());
      }
      LOG.debug("RabbitMQ consumer of group '{}': {}; {}", pipeline.consumerGroup(), config, pipeline);
    }
  }

  /** The configuration this consumer was created with. */
  public RabbitConsumerConfig config() {
    return config;
  }

  /**
   * {@code true} from {@link #start()} until {@link #close()}, unless a worker thread died (see
   * "Failed settlement and failures in processing" in the class description): then {@code false}
   * for good, and the consumer should be closed and replaced.
   */
  @Override
  public boolean isRunning() {
    return state == State.RUNNING && !stopping && !failed;
  }

  /** Graceful stop; see the class description. Idempotent. */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (state != State.RUNNING) {
        state = State.CLOSED;
        return;
      }
      synchronized (sessionSwap) {
        stopping = true; // a reconnect finishing from now on closes its own session
      }
      long deadline = System.nanoTime() + config.shutdownTimeout().toNanos();
      ScheduledExecutorService recovery = Objects.requireNonNull(supervisor);
      recovery.shutdown(); // runs pending closes of lost connections, drops pending reconnects
      awaitQuietly(recovery, remaining(deadline));
      Session current = session;
      if (current != null && current.isOpen()) {
        current.cancelConsumer();
      }
      List<Thread> unfinished = AdapterWorker.awaitAll(workers, deadline);
      if (!unfinished.isEmpty()) {
        LOG.warn("{} handler(s) of {} still running after shutdownTimeout {}: interrupted; their deliveries"
            + " go back to the queue unacknowledged, not counted as attempts", unfinished.size(), config.queue(),
            config.shutdownTimeout());
        AdapterWorker.interruptAndAwait(unfinished, AdapterWorker.AFTER_INTERRUPT);
      }
      int unprocessed = buffer.size();
      buffer.clear();
      if (current != null) {
        current.close(Duration.ofMillis(Math.max(1_000, remaining(deadline).toMillis())));
      }
      state = State.CLOSED;
      LOG.info("stopped consuming {}: {} prefetched deliveries returned unacknowledged", config.queue(), unprocessed);
    }
  }

  private Session openSession() throws IOException, TimeoutException {
    return Session.open(generations.incrementAndGet(), factory, config, this::received, this::lost);
  }

  /** Deliveries received and not yet taken by a worker. For tests. */
  int buffered() {
    return buffer.size();
  }

  private void received(Delivery delivery) {
    lastDelivery = delivery.receivedAt();
    buffer.add(delivery);
  }

  /** Called from a client thread when a session's connection or channel closed. */
  private void lost(Session gone) {
    if (stopping || abandoned) {
      return; // closing, or no worker left: nothing to reconnect for
    }
    LOG.warn("lost the connection or channel of {} (generation {}): its deliveries are void and will be"
        + " redelivered; reconnecting in {}", config.queue(), gone.generation, config.recoveryInterval());
    ScheduledExecutorService recovery = supervisor;
    if (recovery == null) {
      return;
    }
    try {
      recovery.execute(() -> gone.close(Duration.ofSeconds(5)));
      recovery.schedule(this::reconnect, config.recoveryInterval().toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  /** Supervisor thread, like {@link #stopConsuming()}: the two never overlap. */
  private void reconnect() {
    if (stopping || abandoned) {
      return;
    }
    try {
      Session next = openSession();
      synchronized (sessionSwap) {
        if (!stopping && !abandoned) {
          session = next;
          LOG.info("reconnected to {} (generation {})", config.queue(), next.generation);
          return;
        }
      }
      // close() (or the last worker's end) came while the connection was being opened: it read
      // the session before this one existed, so nobody else would close it and a consumer with
      // no worker would hold up to prefetch deliveries away from the queue
      LOG.info("closing the connection of {} opened while the consumer closed (generation {})",
          config.queue(), next.generation);
      next.close(Duration.ofSeconds(5));
    } catch (Exception e) {
      LOG.warn("reconnecting to {} failed: {}; next try in {}", config.queue(), e.toString(), config.recoveryInterval());
      ScheduledExecutorService recovery = supervisor;
      if (!stopping && !abandoned && recovery != null) {
        try {
          recovery.schedule(this::reconnect, config.recoveryInterval().toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
          // closing
        }
      }
    }
  }

  private void work() {
    Throwable death = null;
    try {
      consume(); // returns when stopping, or when interrupted while waiting for a delivery
    } catch (Throwable e) {
      death = e;
      throw e;
    } finally {
      if (!stopping) {
        workerEnded(death == null ? "interrupted while waiting for a delivery" : death.toString());
      }
    }
  }

  /**
   * A worker ended before {@link #close()}. The last one stops consumption: otherwise RabbitMQ
   * would go on pushing up to {@code prefetch} deliveries to a buffer nobody reads, held from the
   * queue's other consumers until {@link #close()}.
   */
  private void workerEnded(String why) {
    failed = true;
    String worker = Thread.currentThread().getName();
    if (liveWorkers.decrementAndGet() > 0) {
      LOG.error("worker {} of {} ended ({}) while the consumer runs; {} worker(s) left. isRunning() is"
          + " false from now on: close the consumer and start a new one", worker, config.queue(), why,
          liveWorkers.get());
      return;
    }
    synchronized (sessionSwap) {
      abandoned = true; // first: no reconnect from now on
    }
    ScheduledExecutorService recovery = Objects.requireNonNull(supervisor);
    try {
      recovery.execute(this::stopConsuming); // after a reconnect under way, never beside it
    } catch (RejectedExecutionException e) {
      return; // close() is under way and closes the session itself
    }
    LOG.error("consumer of {} stopped consuming: its last worker {} ended ({}). Its connection is closed,"
        + " so RabbitMQ requeues every delivery it held for the queue's other consumers, and it does not"
        + " reconnect. isRunning() is false: close it and start a new one", config.queue(), worker, why);
  }

  /** No worker is left: ends the current session for good. Supervisor thread. */
  private void stopConsuming() {
    Session current = session;
    if (current != null) {
      current.close(Duration.ofSeconds(5));
    }
    buffer.clear(); // of the closed session: requeued by RabbitMQ
  }

  private void consume() {
    // per-message mode: each delivery's claim may travel with the previous delivery's COMMIT
    // (MessageRun): the worker takes the delivery it announces from the buffer and processes it
    // next. The run is closed, rolling back a claim sent for a delivery not reached, however this
    // loop ends.
    MessageRun run = config.maxBatchSize() == 1 ? pipeline.openRun() : null;
    Announced announced = new Announced();
    try {
      while (!stopping) {
        Delivery delivery = announced.delivery;
        announced.delivery = null;
        if (delivery == null) {
          try {
            delivery = buffer.poll(POLL.toMillis(), TimeUnit.MILLISECONDS);
          } catch (InterruptedException e) {
            return;
          }
          announced.message = null;
        }
        if (delivery == null) {
          continue;
        }
        if (stopping) {
          return; // prefetched, not started: returned unacked when the connection closes
        }
        ProcessingOutcome outcome;
        if (run != null) {
          if (!delivery.session().isOpen()) {
            LOG.debug("dropping delivery {} of lost generation {}: RabbitMQ requeued it", delivery.tag(),
                delivery.session().generation);
            continue;
          }
          MessageRun current = run;
          outcome = process(delivery, announced, (message, acknowledgement, next) ->
              current.process(message, acknowledgement, next));
          if (outcome == null || outcome == ProcessingOutcome.RELEASED) {
            // whatever escaped the run, or a delivery handed back: start a clean run (close rolls back
            // a claim carried for the announced delivery, which is still processed next, by its own call)
            run.close();
            run = pipeline.openRun();
          }
        } else {
          List<Delivery> batch = takeBatch(delivery);
          if (batch.isEmpty()) {
            continue;
          }
          outcome = batch.size() == 1 ? process(batch.get(0), null, null) : processBatch(batch);
        }
        Delivery first = delivery;
        if (AdapterWorker.stopsAfter(stopping, outcome, () -> first + " of " + config.queue(), LOG)) {
          return; // close() interrupted the handler: its delivery went back to the queue unacknowledged
        }
      }
    } finally {
      if (run != null) {
        run.close();
      }
      Delivery left = announced.delivery;
      if (left != null && !stopping) {
        buffer.add(left); // this worker ends: another one takes the delivery it had announced
      }
    }
  }

  /**
   * The delivery a run announced as its next one, taken from the buffer for this worker, and the
   * message built for it then (handed to the run again, so it is not keyed twice). Worker-local.
   */
  private static final class Announced {
    @Nullable Delivery delivery;
    @Nullable RabbitInboundMessage message;
    DeliveryAttempts.@Nullable Attempt attempt;
  }

  /** How one delivery reaches the pipeline: {@link IdempotentConsumer#process} or a run's. */
  @FunctionalInterface
  private interface Processing {
    ProcessingOutcome process(RabbitInboundMessage message, Acknowledgement acknowledgement,
        Supplier<@Nullable InboundMessage> next);
  }

  /**
   * {@code first} and the deliveries buffered behind it, up to {@link
   * RabbitConsumerConfig#maxBatchSize()}, all of {@code first}'s session, waiting at most {@link
   * #BATCH_LINGER} for more. A delivery of a lost session is dropped (RabbitMQ requeued it); one of
   * another live session — which cannot happen, as a session is lost before the next one opens —
   * goes back to the buffer.
   */
  private List<Delivery> takeBatch(Delivery first) {
    List<Delivery> taken = new ArrayList<>();
    taken.add(first);
    if (config.maxBatchSize() > 1) {
      buffer.drainTo(taken, config.maxBatchSize() - 1);
      long lingerUntil = System.nanoTime() + BATCH_LINGER.toNanos();
      while (taken.size() < config.maxBatchSize() && System.nanoTime() < lingerUntil) {
        try {
          Delivery more = buffer.poll(lingerUntil - System.nanoTime(), TimeUnit.NANOSECONDS);
          if (more == null) {
            break;
          }
          taken.add(more);
          buffer.drainTo(taken, config.maxBatchSize() - taken.size());
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    List<Delivery> batch = new ArrayList<>(taken.size());
    for (Delivery d : taken) {
      if (!d.session().isOpen()) {
        LOG.debug("dropping delivery {} of lost generation {}: RabbitMQ requeued it", d.tag(),
            d.session().generation);
      } else if (batch.isEmpty() || batch.get(0).session() == d.session()) {
        batch.add(d);
      } else {
        buffer.add(d);
      }
    }
    return batch;
  }

  /**
   * Runs a batch of deliveries of one session through {@link IdempotentConsumer#processBatch} with
   * {@link BatchOrder#UNORDERED} (competing consumers keep no order); each delivery is settled by
   * its own {@link RabbitAcknowledgement}, on its own channel. Whatever escapes returns every
   * delivery not settled, as {@link #process} does for one.
   *
   * @return {@link ProcessingOutcome#RELEASED} when close() interrupted the batch, else any outcome
   */
  private @Nullable ProcessingOutcome processBatch(List<Delivery> batch) {
    List<RabbitAcknowledgement> ours = new ArrayList<>(batch.size());
    BatchAcks acks = new BatchAcks(batch.get(0).session(), attempts);
    return AdapterWorker.survive(
        () -> "a batch of " + batch.size() + " deliveries of " + config.queue(),
        () -> {
          try {
            List<InboundMessage> messages = new ArrayList<>(batch.size());
            for (Delivery delivery : batch) {
              DeliveryAttempts.Attempt attempt = attemptOf(delivery);
              messages.add(message(delivery, attempt));
              ours.add(new RabbitAcknowledgement(delivery, config, attempts, attempt.number(), this::rerun, acks));
            }
            List<ProcessingOutcome> outcomes = pipeline.processBatch(
                messages, List.<Acknowledgement>copyOf(ours), BatchOrder.UNORDERED).outcomes();
            return outcomes.contains(ProcessingOutcome.RELEASED) ? ProcessingOutcome.RELEASED : outcomes.get(0);
          } finally {
            acks.flush(); // the acks handed over, however the batch ended: each one after its own COMMIT
          }
        },
        () -> null, // each delivery is checked on its own below
        (failure, after) -> {
          for (int i = 0; i < batch.size(); i++) {
            RabbitAcknowledgement acknowledgement = i < ours.size() ? ours.get(i) : null;
            if (acknowledgement == null || !acknowledgement.settled()) {
              // settled ones were settled by the batch before the throw (UNORDERED settles every other one)
              Unsettled.giveBack(config.queue(), batch.get(i), acknowledgement, failure, after);
            }
          }
        },
        config.recoveryInterval(), () -> failed = true, LOG);
  }

  private DeliveryAttempts.Attempt attemptOf(Delivery delivery) {
    return delivery.attempt() > 0
        // run again after a store outage: the same delivery, not a new attempt, its handler never ran
        ? new DeliveryAttempts.Attempt(delivery.attempt(), false)
        : attempts.attempt(delivery.envelope(), delivery.properties(), delivery.body());
  }

  private RabbitInboundMessage message(Delivery delivery, DeliveryAttempts.Attempt attempt) {
    return new RabbitInboundMessage(
        config.queue(), delivery.envelope(), delivery.properties(), delivery.body(), attempt.number(),
        delivery.receivedAt())
        .withBrokerAttemptLimit(config.queueType() == RabbitQueueType.QUORUM ? config.deliveryLimit() : null)
        .withUnaccountedRedelivery(attempt.unaccounted());
  }

  /**
   * Runs one delivery through the pipeline. Whatever escapes the pipeline (its settlement failed,
   * or an {@link Error} from a listener or key extractor) returns the delivery to the queue unless
   * it was settled; the worker carries on, except after a {@link VirtualMachineError}, which is
   * rethrown once the delivery is on its way back.
   */
  private @Nullable ProcessingOutcome process(Delivery delivery, @Nullable Announced announced,
      @Nullable Processing processing) {
    RabbitAcknowledgement[] acknowledgement = new RabbitAcknowledgement[1];
    return AdapterWorker.survive(
        () -> delivery + " of " + config.queue(),
        () -> {
          DeliveryAttempts.Attempt attempt;
          RabbitInboundMessage message;
          if (announced != null && announced.message != null && announced.attempt != null) {
            attempt = announced.attempt; // built when it was announced: the same object goes to the run
            message = announced.message;
          } else {
            attempt = attemptOf(delivery);
            message = message(delivery, attempt);
          }
          if (announced != null) {
            announced.message = null;
            announced.attempt = null;
          }
          acknowledgement[0] =
              new RabbitAcknowledgement(delivery, config, attempts, attempt.number(), this::rerun, null);
          return processing == null || announced == null
              ? pipeline.process(message, acknowledgement[0])
              : processing.process(message, acknowledgement[0], () -> announce(delivery, announced));
        },
        () -> acknowledgement[0] == null ? null : acknowledgement[0].record(),
        (failure, after) -> Unsettled.giveBack(config.queue(), delivery, acknowledgement[0], failure, after),
        config.recoveryInterval(), () -> failed = true, LOG); // work() then logs the worker's end
  }

  /**
   * Takes the delivery buffered next, if any, for this worker to process right after {@code
   * current}, and builds its message: asked by a run when {@code current}'s transaction is about to
   * commit, so that its claim can travel with that COMMIT (not for a possible redelivery: it is
   * taken, but announced as none). Nothing is taken while closing, nor a
   * delivery of another session (it goes back to the buffer; one of a lost session is dropped:
   * RabbitMQ requeued it).
   */
  private @Nullable InboundMessage announce(Delivery current, Announced announced) {
    if (stopping || announced.delivery != null) {
      return null;
    }
    Delivery next = buffer.poll();
    if (next == null) {
      return null;
    }
    if (next.session() != current.session() || !next.session().isOpen()) {
      if (next.session().isOpen()) {
        buffer.add(next);
      }
      return null;
    }
    announced.delivery = next; // from now on this worker's: processed next even if the run fails
    DeliveryAttempts.Attempt attempt = attemptOf(next);
    RabbitInboundMessage message = message(next, attempt);
    announced.attempt = attempt;
    announced.message = message;
    // a possible redelivery writes its attempt on a connection of its own before its claim: its claim
    // is not carried, so that a worker never holds a carried transaction while it waits for another
    // pooled connection
    return attempt.unaccounted() ? null : message;
  }

  /** A delivery held through a store outage goes back to the workers; settler thread, no blocking. */
  private void rerun(Delivery delivery) {
    if (!stopping) {
      buffer.add(delivery);
    }
  }

  /**
   * Says at start whether the quorum queue's delivery limit leaves room for the retry policy and
   * for hand-backs: before RabbitMQ 4.3 every return counts, so each {@code maxHold} of a store
   * outage costs a held message one delivery; from 4.3 a hand-back ({@code basic.nack}) costs
   * nothing.
   */
  private void checkDeliveryLimit(String serverVersion) {
    if (config.queueType() != RabbitQueueType.QUORUM) {
      return;
    }
    Integer limit = config.deliveryLimit();
    int maxAttempts = pipeline.retryPolicy().maxAttempts();
    boolean countsEveryReturn = countsEveryReturn(serverVersion);
    if (limit == null) {
      LOG.info("quorum queue {}: its delivery limit is not configured here (deliveryLimit); it may come"
          + " from a policy, and RabbitMQ 4.0+ applies 20 by default. It should be at least maxAttempts {}{}",
          config.queue(), maxAttempts, countsEveryReturn
              ? " plus one per maxHold (" + config.maxHold() + ") of the longest store outage to ride out,"
                  + " plus one per restart or connection loss: RabbitMQ " + serverVersion + " counts every return"
              : " (RabbitMQ " + serverVersion + " does not count a hand-back)");
      return;
    }
    if (limit < maxAttempts) {
      LOG.warn("queue {} has x-delivery-limit={} below the retry policy's maxAttempts={}: RabbitMQ will"
          + " dead-letter failing messages itself, without Idem's reason headers", config.queue(), limit, maxAttempts);
    } else if (limit < minimumDeliveryLimit(maxAttempts)) {
      LOG.warn("quorum queue {} has x-delivery-limit={} below 2 x maxAttempts ({}): a message whose handler"
          + " kills the process is dead-lettered by Idem after maxAttempts deaths, but every death also"
          + " returns the messages prefetched with it (each return counted toward the limit), so RabbitMQ"
          + " may dead-letter those, unprocessed and without Idem's reason, first; raise deliveryLimit"
          + " (docs/BROKERS.md)", config.queue(), limit, minimumDeliveryLimit(maxAttempts));
    } else if (countsEveryReturn) {
      int room = limit - maxAttempts;
      LOG.info("quorum queue {}: x-delivery-limit {} leaves {} returns beyond maxAttempts {}. RabbitMQ {}"
          + " counts every return: a held message uses one per maxHold ({}) of a store outage, so an outage"
          + " longer than about {} (or that many restarts) lets RabbitMQ dead-letter it without Idem's reason;"
          + " raise deliveryLimit for more", config.queue(), limit, room, maxAttempts, serverVersion,
          config.maxHold(), config.maxHold().multipliedBy(Math.max(1, room)));
    }
  }

  /**
   * The smallest quorum queue {@code x-delivery-limit} that leaves Idem the first word:
   * {@code 2 x maxAttempts}, since a good message prefetched with a process-killing one is returned
   * (and counted) once per death, up to maxAttempts times, before it gets its own attempts.
   */
  static int minimumDeliveryLimit(int maxAttempts) {
    return (int) Math.min(Integer.MAX_VALUE, 2L * maxAttempts);
  }

  /** RabbitMQ before 4.3 counts every return of a quorum queue's message toward its delivery limit. */
  static boolean countsEveryReturn(String serverVersion) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)\\.(\\d+)").matcher(serverVersion);
    if (!m.find()) {
      return true; // unknown: assume the costlier rule
    }
    int major = Integer.parseInt(m.group(1));
    int minor = Integer.parseInt(m.group(2));
    return major < 4 || (major == 4 && minor < 3);
  }

  /**
   * A snapshot for readiness probes, touching neither broker nor database: connected (the
   * current connections and channels are open), consuming (the queue, while the consumer is
   * registered on a live channel), the last delivery's arrival (RabbitMQ pushes; {@code null}
   * before the first, and an idle queue leaves it old), deliveries held on the settler thread
   * for a retry backoff, a store outage or a return, and {@link IdempotentConsumer#storeHealth()}.
   * During a reconnect {@code connected} is {@code false}. Thread-safe.
   */
  @Override
  public ConsumerHealth health() {
    Session current = session;
    boolean live = current != null && current.isConsuming();
    return new ConsumerHealth(isRunning(), live && !abandoned, live && isRunning() ? List.of(config.queue()) : List.of(),
        lastDelivery, current == null ? 0 : current.held(), pipeline.storeHealth());
  }

  private static Duration remaining(long deadlineNanos) {
    return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
  }

  private static void awaitQuietly(ScheduledExecutorService executor, Duration timeout) {
    try {
      executor.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public String toString() {
    return "RabbitIdempotentConsumer[" + config.queue() + ", " + state + (failed ? ", FAILED" : "") + "]";
  }
}
