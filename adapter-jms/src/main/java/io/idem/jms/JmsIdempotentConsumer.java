package io.idem.jms;

import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.spi.AdapterWorker;
import jakarta.jms.JMSException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a JMS queue through an idempotent pipeline, on any Jakarta Messaging 3.x provider
 * (tested on ActiveMQ Artemis). Only {@code jakarta.jms-api} is needed at compile time.
 *
 * <pre>{@code
 * JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
 *     JmsConsumerConfig.builder(connectionFactory, "orders", "orders.dlq").concurrency(4).build(),
 *     pipeline);
 * consumer.start();
 * }</pre>
 *
 * <h2>Workers and acknowledgement</h2>
 *
 * {@link JmsConsumerConfig#concurrency()} workers each own a connection, one session and one
 * thread, and process one message at a time (or one batch, below): receive, run {@link
 * IdempotentConsumer#process} (database transaction), then settle on that session (see {@link JmsAcknowledgement}). In the
 * default {@link JmsSessionMode#TRANSACTED} mode the JMS transaction is committed only after the
 * database transaction committed; on a handler failure the database rolls back first, then the
 * JMS session. A crash between the two commits leaves the message unacknowledged: it is
 * redelivered and skipped as a duplicate. {@link JmsSessionMode#CLIENT_ACKNOWLEDGE} uses one
 * session per worker for the reason given there.
 *
 * <h2>Batches</h2>
 *
 * With {@link JmsConsumerConfig#maxBatchSize()} above 1 — the default, {@value
 * JmsConsumerConfig#DEFAULT_MAX_BATCH_SIZE}; {@code maxBatchSize(1)} is per-message mode — a
 * worker's session holds several messages:
 * after a blocking {@code receive} it takes up to {@code maxBatchSize - 1} more with {@code
 * receiveNoWait()} (never waiting for more), runs them through one {@link
 * IdempotentConsumer#processBatch} — one multi-row claim, one database COMMIT — and then settles
 * the session once: one {@code commit()} ({@code TRANSACTED}) or one {@code acknowledge()} ({@code
 * CLIENT_ACKNOWLEDGE}, which covers every message the session delivered). With one worker the
 * batch is {@link io.idem.BatchOrder#ORDERED} (nothing overtakes a retried message, as when a
 * rollback puts it back at the head of the queue); with several, {@code UNORDERED}.
 *
 * <p>A session cannot acknowledge one message and roll back another. So when one message of a
 * batch needs to run again, the session is neither committed nor rolled back yet: the message is
 * retried inside the session. A handler failure's retry waits the pipeline's backoff and runs the
 * message again (on its own, one handler run per attempt) as the next attempt, in process: the
 * broker's {@code JMSXDeliveryCount} does not move, so neither its {@code max-delivery-attempts}
 * nor a redelivery of the already applied messages comes into it — they stay in the session,
 * applied once, and are committed with the rest once the failing message is applied or
 * dead-lettered (its copy is sent in the same JMS transaction when transacted); the backoff is
 * waited in process whatever {@link JmsConsumerConfig#holdForRetryBackoff()} says, as the broker's
 * redelivery delay never applies to it. A store outage
 * keeps the whole batch in the session the same way, not counted. Rolling the batch back instead
 * was rejected: every message of it would come back with {@code JMSXDeliveryCount} one higher,
 * counting a delivery that ran no handler against the broker's limit and against the attempts of
 * the messages that had not failed. What the session holds stays unacknowledged meanwhile (a crash
 * redelivers it, and the store acks what was applied as duplicates): the applied messages cannot be
 * committed before the failing one's backoffs, as a session's commit (or acknowledge) settles
 * every message it received, the failing one included (see {@link
 * JmsConsumerConfig#DEFAULT_MAX_BATCH_SIZE}). Only when the batch cannot
 * stay — {@link #close()} interrupted it, the connection broke, a dead-letter copy could not be
 * sent, or a message could not be read — is the whole session rolled back (or recovered): its
 * applied messages then come back with a higher {@code JMSXDeliveryCount} and are acked as
 * duplicates; after an unreadable message the worker takes the next {@code maxBatchSize} messages
 * one by one, so that the broker moves that one alone.
 *
 * <h2>Attempts, redelivery delay and dead letters: broker and {@link io.idem.RetryPolicy}</h2>
 *
 * <ul>
 *   <li>The attempt number is the broker's {@code JMSXDeliveryCount} for a first delivery; a retry
 *       after a handler failure in this consumer's life is counted by the consumer (one more than
 *       the failed attempt). On ActiveMQ Artemis messages prefetched by the client and released
 *       unstarted at close do not raise it (measured on 2.56); when the process dies, or the
 *       connection breaks, the broker raises the count of every message the session held,
 *       prefetched ones included.
 *   <li>Process deaths (docs/FAILURES.md, "Attempts that survive the process"): a delivery the
 *       broker marks as delivered before ({@code JMSRedelivered} or {@code JMSXDeliveryCount}
 *       above 1) that this consumer did not see end — it never saw it (a restart, another
 *       instance), or handed it to a handler and never saw that run's outcome — is flagged as
 *       {@linkplain JmsInboundMessage#unaccountedRedelivery() unaccounted}, up to
 *       {@value JmsDeliveryAttempts#CAPACITY} messages remembered per consumer. For those the
 *       pipeline counts the attempt in the store before the handler runs and takes the attempt
 *       from that count, not from {@code JMSXDeliveryCount}: a message that kills the process is
 *       dead-lettered with {@code MAX_ATTEMPTS_EXCEEDED} after at most {@code maxAttempts} deaths,
 *       and the messages prefetched with it are not charged for its deaths. In batch mode a
 *       batch holding a flagged delivery is processed message by message. {@link #start()} logs a
 *       WARN when the broker's {@code max-delivery-attempts} is not above {@code maxAttempts}: the
 *       broker would then move such a message (and those prefetched with it) first.
 *   <li>Spacing: the JMS API has no per-message delay on rollback, and Artemis' default
 *       {@code redelivery-delay} is 0. With {@link JmsConsumerConfig#holdForRetryBackoff()} (the
 *       default) the worker holds the failed message in its open transaction for the pipeline's
 *       backoff, less the broker's own redelivery delay where known, before rolling back; only
 *       that worker waits, and {@link #close()} cuts the hold short.
 *   <li>The broker's limit: {@link #start()} reads the queue's {@code max-delivery-attempts} and
 *       dead-letter address (Artemis management messages on {@code activemq.management}, when the
 *       connection factory is Artemis'; for other providers declared with
 *       {@link JmsConsumerConfig.Builder#brokerMaxDeliveryAttempts(int)} and
 *       {@link JmsConsumerConfig.Builder#brokerDeadLetterQueue(String)}, and a start-up error when
 *       undeclared). It refuses to start when the broker could drop a message (a limit and no
 *       dead-letter address, or one with no queue and {@code auto-create-dead-letter-resources}
 *       off: Artemis drops such a message, AMQ222148).
 *   <li>When the pipeline gives up (its {@code RetryPolicy.maxAttempts()} reached, a
 *       non-retryable failure, no key, a payload conflict) the adapter sends a copy carrying the
 *       reason to {@link JmsConsumerConfig#deadLetterQueue()} and consumes the original in the
 *       same JMS transaction: atomic, with the reason. When the broker's limit is lower, the
 *       delivery at that limit is dead-lettered the same way instead of rolled back (see
 *       {@link JmsAcknowledgement}), so a failing handler is dead-lettered at the lower of the two
 *       ({@link #maxAttempts()}) and never by the broker. A delivery whose count other messages'
 *       deaths raised (flagged as above, or above this consumer's attempt) is not dead-lettered
 *       at the broker's limit: on the broker's last delivery it is retried inside its session
 *       (held for the backoff, run again as the next attempt), until {@code maxAttempts}.
 *   <li>The broker's own limit stays the backstop for messages that never reach the pipeline's
 *       decision (an unreadable message; a handler that crashes the JVM when the broker's limit
 *       is not above {@code maxAttempts}, or with a store that keeps no attempt counts): the
 *       broker then moves the message to its dead-letter address without Idem's reason. Set that
 *       address to the same queue as Idem's.
 *   <li>Database outages: the pipeline never dead-letters for a
 *       {@link io.idem.StoreUnavailableException}, and the worker does not roll back for one
 *       either (a rollback would raise {@code JMSXDeliveryCount} toward the broker's
 *       {@code max-delivery-attempts}): it keeps the message in its open transaction (or
 *       unacknowledged, in {@code CLIENT_ACKNOWLEDGE} mode), waits for the pipeline's backoff and
 *       processes it again, for as long as the store is down. The worker takes no other message
 *       meanwhile. {@link #close()} cuts the wait short and rolls back (or recovers), so the
 *       broker has the message again; a lost connection returns it as well.
 *   <li>Missing dead-letter queue: ActiveMQ Artemis drops a message whose dead-letter address has
 *       no queue. {@link #start()} therefore browses {@link JmsConsumerConfig#deadLetterQueue()}
 *       and refuses to start when the provider says it does not exist (with auto-create enabled,
 *       Artemis creates it instead).
 * </ul>
 *
 * <h2>Keys</h2>
 *
 * JMS property names must be Java identifiers; producers set the key in the String property
 * {@value JmsHeaderNames#DEFAULT_KEY_PROPERTY}, which the default key extractor finds as header
 * {@code idempotency-key} (see {@link JmsHeaderNames}). CloudEvents' JMS binding properties
 * ({@code ce_id}, {@code ce_source}) work with {@code IdempotencyKeyExtractor.cloudEvents()}.
 * {@code JMSMessageID} is used only through the explicit
 * {@code IdempotencyKeyExtractor.brokerMessageId()} fallback: it changes on re-send and across
 * bridges.
 *
 * <h2>Failures in processing</h2>
 *
 * A worker survives whatever processing a message throws: a failed settlement, or an
 * {@link Error} from an {@link io.idem.IdempotencyListener} or a key extractor, which the pipeline
 * does not catch (it turns the handler's own errors into handler failures). The session is
 * rolled back ({@code TRANSACTED}) or recovered ({@code CLIENT_ACKNOWLEDGE}) so the broker
 * redelivers the message — it is never acknowledged, and one already committed or acknowledged
 * is left alone — and the error is logged at ERROR with the {@code JMSMessageID}; the worker then
 * pauses for {@link JmsConsumerConfig#reconnectBackoff()} before it receives again
 * ({@link io.idem.spi.AdapterWorker#survive}). The exception is a
 * {@link VirtualMachineError} (out of memory, a stack overflow, an internal VM error), which is
 * not swallowed: the session is rolled back (best effort; closing the connection rolls back too), the
 * worker thread ends with the error, and {@link #isRunning()} turns {@code false} for good. A
 * worker that ends for any other reason before {@link #close()} does the same. The other workers
 * go on, but the consumer should be closed and replaced.
 *
 * <h2>Lifecycle</h2>
 *
 * {@link #start()} connects every worker (errors surface there), then starts their threads.
 * {@link #close()} stops receiving, lets each worker finish and settle its in-flight message (in batch mode, its batch),
 * closes the sessions (messages prefetched but not processed return to the broker
 * unacknowledged), and waits up to {@link JmsConsumerConfig#shutdownTimeout()} (plus one
 * {@link JmsConsumerConfig#receiveTimeout()}); a worker still busy then is interrupted: a handler
 * that stops on it is not a failure ({@link io.idem.ProcessingOutcome#RELEASED}: no attempt, no
 * dead letter), and the worker rolls back (or recovers) its own session, so the broker has the
 * message again, and stops. A worker still busy {@link AdapterWorker#AFTER_INTERRUPT} (5 s) later
 * has its connection closed, which abandons its message uncommitted. A lost connection is reopened after
 * {@link JmsConsumerConfig#reconnectBackoff()}. Thread-safe: {@link #start()}, {@link #close()} and
 * {@link #isRunning()} may be called from any thread; each worker's JMS session is used by its own
 * thread only.
 */
public final class JmsIdempotentConsumer implements BrokerConsumer {
  private static final Logger LOG = LoggerFactory.getLogger(JmsIdempotentConsumer.class);

  private enum State { NEW, RUNNING, CLOSED }

  private final JmsConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final List<JmsWorker> workers = new ArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private State state = State.NEW;
  private @Nullable JmsBrokerLimits limits;
  /** What this consumer's workers saw of their deliveries: flags unaccounted redeliveries. */
  private final JmsDeliveryAttempts attempts = new JmsDeliveryAttempts(JmsDeliveryAttempts.CAPACITY);

  private JmsIdempotentConsumer(JmsConsumerConfig config, IdempotentConsumer<?> pipeline) {
    this.config = config;
    this.pipeline = pipeline;
  }

  /**
   * Builds a consumer; nothing connects before {@link #start()}.
   *
   * @param config queue, dead-letter queue, connection factory and workers
   * @param pipeline the idempotent pipeline each message goes through
   */
  public static JmsIdempotentConsumer create(JmsConsumerConfig config, IdempotentConsumer<?> pipeline) {
    return new JmsIdempotentConsumer(
        Objects.requireNonNull(config, "config"), Objects.requireNonNull(pipeline, "pipeline"));
  }

  /** The configuration this consumer was created with. */
  public JmsConsumerConfig config() {
    return config;
  }

  /**
   * Checks the dead-letter queue, connects every worker and starts their threads.
   *
   * @throws IllegalStateException when already started or closed
   * @throws IdempotencyException when the dead-letter queue does not exist (and
   *     {@link JmsConsumerConfig#verifyDeadLetterQueue()} is on); when the broker's redelivery
   *     limit cannot be read (not Artemis and not declared, or management refused) or the broker
   *     could drop a message at that limit (the message names the setting, its value and the fix);
   *     or the provider refused a connection, the queue or the selector; everything opened so far
   *     is closed again
   */
  @Override
  public synchronized void start() {
    if (state != State.NEW) {
      throw new IllegalStateException("JmsIdempotentConsumer on " + config.queue() + " is " + state
          + "; start() may be called once");
    }
    try {
      if (config.verifyDeadLetterQueue()) {
        verifyDeadLetterQueue();
      }
      JmsBrokerLimits brokerLimits = JmsBrokerLimits.of(config);
      brokerLimits.requireNothingDropped(config, pipeline.retryPolicy().maxAttempts());
      limits = brokerLimits;
      int idemMax = pipeline.retryPolicy().maxAttempts();
      if (brokerLimits.limited() && brokerLimits.maxDeliveryAttempts() <= idemMax) {
        LOG.warn("the broker's max-delivery-attempts for {} ({}) is not above the pipeline's maxAttempts"
            + " ({}): a message whose handler kills the process is moved by the broker to '{}' after {}"
            + " deaths, without Idem's reason, before Idem dead-letters it; the messages prefetched with"
            + " it count each of its deaths too and may be moved with it, unprocessed. Set"
            + " max-delivery-attempts above maxAttempts (well above it when several such messages may"
            + " be in one consumer's prefetch window), or -1 ({})", config.queue(),
            brokerLimits.maxDeliveryAttempts(), idemMax, brokerLimits.deadLetterAddress(),
            brokerLimits.maxDeliveryAttempts(), brokerLimits);
      }
      if (brokerLimits.deadLetterAddress() != null
          && !brokerLimits.deadLetterAddress().equals(config.deadLetterQueue())) {
        LOG.warn("the broker moves messages of {} it gives up on to '{}', Idem's dead letters go to"
            + " '{}': two places to watch ({})", config.queue(), brokerLimits.deadLetterAddress(),
            config.deadLetterQueue(), brokerLimits);
      }
      for (int i = 0; i < config.concurrency(); i++) {
        JmsWorker worker = new JmsWorker(config, pipeline, "idem-jms-" + config.queue() + "-" + i, brokerLimits,
            attempts);
        workers.add(worker);
        worker.connect();
      }
    } catch (JMSException | RuntimeException e) {
      workers.forEach(JmsWorker::abort);
      workers.clear();
      state = State.CLOSED;
      if (e instanceof IdempotencyException ie) {
        throw ie;
      }
      throw new IdempotencyException("could not start consuming " + config.queue() + ": " + e, e);
    }
    for (JmsWorker worker : workers) {
      Thread thread = new Thread(worker, worker.name());
      thread.setDaemon(false);
      threads.add(thread);
      thread.start();
    }
    state = State.RUNNING;
    LOG.info("JMS consumer started: group '{}', queue {}, {} workers, max attempts {}; broker: {}",
        pipeline.consumerGroup(), config.queue(), config.concurrency(), maxAttempts(), limits);
    LOG.debug("JMS consumer of group '{}': {}; {}", pipeline.consumerGroup(), config, pipeline);
  }

  private void verifyDeadLetterQueue() {
    String dlq = config.deadLetterQueue();
    if (!JmsBrokerLimits.queueExists(config, dlq)) {
      throw missingDeadLetterQueue(dlq);
    }
  }

  private IdempotencyException missingDeadLetterQueue(String dlq) {
    return new IdempotencyException("dead-letter queue '" + dlq + "' for queue '" + config.queue()
        + "' does not exist (the provider refused to browse it). Create it before starting:"
        + " a broker such as ActiveMQ Artemis drops a message whose dead-letter address has no"
        + " queue, so consuming without it could lose messages. (To skip this check set"
        + " JmsConsumerConfig.Builder.verifyDeadLetterQueue(false).)");
  }

  /**
   * Stops gracefully as described in the class description; idempotent. Blocks up to
   * {@link JmsConsumerConfig#shutdownTimeout()} plus one {@link JmsConsumerConfig#receiveTimeout()}.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (state == State.CLOSED) {
        return;
      }
      state = State.CLOSED;
    }
    workers.forEach(JmsWorker::stop);
    long deadline = System.nanoTime() + config.shutdownTimeout().toNanos()
        + config.receiveTimeout().toNanos();
    List<Thread> busy = AdapterWorker.awaitAll(threads, deadline);
    if (!busy.isEmpty()) {
      // past the timeout: interrupt the handlers; one that stops on it is not a failure, and its
      // worker hands the message back on its own session (rollback or recover)
      LOG.warn("{} worker(s) of {} did not finish their message within {}; interrupting them (the"
          + " message is not acknowledged and will be redelivered)", busy.size(), config.queue(),
          config.shutdownTimeout());
      for (Thread still : AdapterWorker.interruptAndAwait(busy, AdapterWorker.AFTER_INTERRUPT)) {
        JmsWorker worker = workers.get(threads.indexOf(still));
        LOG.warn("{} still runs; closing its connection", worker.name());
        worker.abort();
      }
    }
    boolean interrupted = Thread.interrupted();
    for (Thread thread : threads) {
      try {
        thread.join(5_000);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    LOG.info("stopped consuming {} for consumer group '{}'", config.queue(), pipeline.consumerGroup());
  }

  /**
   * {@code true} from {@link #start()} until {@link #close()}, unless a worker ended (see "Failures
   * in processing" in the class description): then {@code false} for good, and the consumer should
   * be closed and replaced.
   */
  @Override
  public synchronized boolean isRunning() {
    return state == State.RUNNING && workers.stream().noneMatch(JmsWorker::failed);
  }

  /**
   * The attempt at which a failing message is dead-lettered: the lower of the pipeline's {@code
   * RetryPolicy.maxAttempts()} and the broker's {@code max-delivery-attempts} (known after {@link
   * #start()}).
   */
  public synchronized int maxAttempts() {
    int idem = pipeline.retryPolicy().maxAttempts();
    JmsBrokerLimits l = limits;
    return l != null && l.limited() ? Math.min(idem, l.maxDeliveryAttempts()) : idem;
  }

  /**
   * What the consumer is doing, for readiness probes: running ({@link #isRunning()}); connected
   * (every worker holds a connection on which the provider reported no exception; {@code false}
   * while one reconnects); consuming ({@link JmsConsumerConfig#queue()} while at least one worker
   * is connected); the last receive that returned without an error (an empty wait of {@link
   * JmsConsumerConfig#receiveTimeout()} counts: an idle queue is healthy); the messages workers
   * hold in their sessions for a retry backoff or a store outage; and the pipeline's
   * {@code storeHealth()}. Thread-safe; touches neither broker nor database.
   */
  @Override
  public ConsumerHealth health() {
    boolean running = isRunning();
    List<JmsWorker> snapshot;
    synchronized (this) {
      snapshot = List.copyOf(workers);
    }
    boolean connected = running && !snapshot.isEmpty() && snapshot.stream().allMatch(JmsWorker::connected);
    boolean anyConnected = running && snapshot.stream().anyMatch(JmsWorker::connected);
    Instant last = snapshot.stream().map(JmsWorker::lastReceive).filter(Objects::nonNull)
        .max(Instant::compareTo).orElse(null);
    int held = (int) snapshot.stream().filter(JmsWorker::holding).count();
    return new ConsumerHealth(running, connected, anyConnected ? List.of(config.queue()) : List.of(),
        last, held, pipeline.storeHealth());
  }

  @Override
  public String toString() {
    return "JmsIdempotentConsumer[" + config.queue() + ", group=" + pipeline.consumerGroup()
        + ", " + state + "]";
  }
}
