package io.idem.kafka;

import io.idem.BrokerConsumer;
import io.idem.ConsumerHealth;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.spi.AdapterWorker;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes Kafka topics through an {@link IdempotentConsumer} pipeline, committing each record's
 * offset only after its database transaction ended.
 *
 * <pre>{@code
 * KafkaConsumerConfig config = KafkaConsumerConfig.builder("localhost:9092", "orders").build();
 * try (KafkaIdempotentConsumer consumer = KafkaIdempotentConsumer.create(config, pipeline)) {
 *   consumer.start();
 *   ...
 * }
 * }</pre>
 *
 * <h2>How Kafka's rules are mapped</h2>
 *
 * <ul>
 *   <li><b>One thread owns the {@code KafkaConsumer}</b> (it is not thread-safe): it polls, runs
 *       records through the pipeline in partition order (in batches, or one by one with {@code
 *       maxBatchSize(1)}), and commits. Scale out with more instances in the same group (up to
 *       one per partition), in this JVM or others.
 *   <li><b>A partition's records are a run</b> ({@link io.idem.IdempotentConsumer#openRun()}) in
 *       per-message mode: each record still has its own transaction and is acknowledged only after
 *       its own COMMIT, but the next record's claim travels with that COMMIT, so a new record costs
 *       two database round trips (the handler's statement; the check, COMMIT and next claim) and a
 *       duplicate one (docs/DESIGN.md, "Runs"). The run ends, rolling back a claim sent for a record
 *       not reached, whenever the partition's records of the poll stop: a retry, a revocation,
 *       {@code close()}, the poll's time budget.
 *   <li><b>Offsets are committed after the database commit</b>, with {@code commitSync}, at most
 *       every {@link KafkaConsumerConfig#commitInterval()} (100 ms by default; zero: after each
 *       polled batch); {@code enable.auto.commit} is
 *       forced off. The offset committed is the consumer's next fetch offset
 *       ({@code ConsumerRecords.nextOffsets()}) when every record the poll returned for the
 *       partition was settled (processed, duplicate or dead-lettered), else offset + 1 of the last
 *       settled record. The next fetch offset also steps over what the consumer never hands out —
 *       a transaction's commit or abort marker, records of aborted transactions under {@code
 *       read_committed} — so a partition whose last record was transactional reaches lag 0
 *       (offset + 1 would leave it at lag 1 for good). A commit never lowers a partition's
 *       committed offset, and never passes a record that is not settled. A crash between the two
 *       commits redelivers records that the store then skips as duplicates.
 *   <li><b>Retry</b> ({@link io.idem.ProcessingOutcome#RETRY}: handler failure with attempts
 *       left, or the store unavailable): settled offsets are committed, the partition is seeked
 *       back to the failed record and paused for the backoff while the loop keeps polling, so
 *       {@code max.poll.interval.ms} is never exceeded and the consumer stays in its group. Records
 *       after the failed one in that batch are dropped and fetched again; other partitions go on.
 *       The record comes back after the backoff plus up to one fetch round trip ({@code
 *       fetch.max.wait.ms}, 500 ms by default). A store outage takes this path on every record,
 *       so offsets stay put and the group membership holds for as long as the outage lasts.
 *   <li><b>Delivery attempts</b> are counted by the adapter in memory, per partition and offset:
 *       Kafka keeps no delivery count. The count restarts at 1 whenever the partition is revoked
 *       or lost and assigned again (with the default eager assignor every rebalance does that,
 *       even one that gives the partition back) and when the consumer restarts. So {@code
 *       maxAttempts} bounds the attempts per owner, not in total: a record whose handler keeps
 *       failing, on a group that rebalances more often than the record's backoffs add up to (a
 *       deployment rolling instance by instance, a crash loop), may run up to {@code maxAttempts}
 *       times per rebalance, and in the worst case is never dead-lettered while the rebalances go
 *       on, holding its partition. Bound it by classifying the failure: throw {@link
 *       io.idem.NonRetryableException} (or declare the exception type non-retryable) for a record
 *       that can never succeed, which dead-letters it on its first attempt whoever owns it; keep
 *       the retry policy's total backoff short next to the time between rebalances; prefer the
 *       cooperative-sticky assignor or static membership ({@code group.instance.id}), under which
 *       a rebalance does not move the partitions that stay with their owner.
 *   <li><b>Process deaths</b> (the JVM halted, killed or crashed in a handler, or an {@code Error}
 *       stopped the consumer) are counted in the store: after an assignment that was not a clean
 *       handover (offset metadata {@code idem:clean}, committed by a revocation or {@code close()}
 *       with no record in a handler), the records from the committed offset on are flagged {@link
 *       io.idem.InboundMessage#unaccountedRedelivery()} — through duplicates and dead letters,
 *       until one record is applied fresh and {@code maxBatchSize - 1} more — and run one at a
 *       time, so the pipeline counts their attempts before their handlers run and dead-letters a
 *       process-killing record with {@code MAX_ATTEMPTS_EXCEEDED} after at most {@code
 *       maxAttempts} deaths. A partition assigned with {@code idem:clean} or no committed offset
 *       is first committed with {@code idem:owned} (one commit per such assignment), so that a
 *       death before this owner's first commit is seen by the next. In-life retries are not
 *       flagged. docs/BROKERS.md, Kafka "Process deaths".
 *   <li><b>Dead letters</b> are published to {@link KafkaConsumerConfig#deadLetterTopic(String)}
 *       by an idempotent {@code acks=all} producer: same key and value, original headers plus
 *       {@link io.idem.DeadLetterReason#toHeaders()} and {@link #HEADER_ORIGINAL_TOPIC},
 *       {@link #HEADER_ORIGINAL_PARTITION}, {@link #HEADER_ORIGINAL_OFFSET},
 *       {@link #HEADER_ORIGINAL_TIMESTAMP}. The offset advances only after the broker acknowledged
 *       the copy; a failed send leaves it and the record comes back after a backoff. The copy is
 *       a few hundred bytes larger than the record: give the dead-letter topic a
 *       {@code max.message.bytes} above the source topic's (the producer's {@code
 *       max.request.size} defaults to {@link KafkaConsumerConfig#DEFAULT_DEAD_LETTER_MAX_REQUEST_SIZE}),
 *       or a record at the size limit cannot be dead-lettered and holds its partition, logged as
 *       an error on every retry.
 *   <li><b>Batch mode</b> ({@link KafkaConsumerConfig#maxBatchSize()} above 1; the default,
 *       {@value KafkaConsumerConfig#DEFAULT_MAX_BATCH_SIZE}; {@code maxBatchSize(1)} is
 *       per-message mode): each partition's records of a poll go through the pipeline in runs of
 *       up to that many per transaction ({@link IdempotentConsumer#processBatch(java.util.List,
 *       java.util.List, io.idem.BatchOrder)}, {@link io.idem.BatchOrder#ORDERED}), each run sized
 *       to the time left in the poll's budget by the time per record measured so far; a failing
 *       record is retried or dead-lettered on its own (its batch rolled back and redone record by
 *       record), the records behind it in its partition come after it, uncounted.
 *   <li><b>Concurrency</b> ({@link KafkaConsumerConfig#concurrency()} above 1): partitions run
 *       side by side on a pool of worker threads named {@code idem-kafka-<group>-<n>-worker-<i>},
 *       one run per partition at a time; the consumer thread alone polls, seeks, pauses and
 *       commits.
 *   <li><b>Rebalances</b>: settled offsets of revoked partitions are committed in
 *       {@code onPartitionsRevoked} (after the workers' runs of those partitions ended); lost
 *       partitions are forgotten without a commit.
 *   <li><b>Bounded work per poll</b>: at most {@link KafkaConsumerConfig#maxPollRecords()} records,
 *       and a poll's records that run past half of {@code max.poll.interval.ms} stop (in batch
 *       mode each batch is cut to fit the time left, {@link KafkaConsumerConfig#maxBatchSize()});
 *       the remaining records are fetched again by the next poll. A single handler call must
 *       still finish well within {@code max.poll.interval.ms}.
 *   <li><b>Failures</b>: anything thrown out of processing a record (a failed acknowledgement, an
 *       {@code Error} from a listener…) is logged as an error. Thrown before the acknowledgement
 *       decided, it is that record's failure: its offset is not committed, the partition is
 *       seeked back to it and paused for the retry backoff, and the loop keeps polling. Thrown
 *       after it (a listener's {@code onOutcome} after an ack or a dead-letter copy), the decision
 *       stands: the record counts as settled and is not processed again. Only a
 *       {@link VirtualMachineError} (out of memory…) stops the consumer thread, logged as an error:
 *       nothing is committed for the record in hand (settled records before it are), and
 *       {@link #isRunning()} turns false at once.
 *   <li><b>Isolation</b>: {@code isolation.level} defaults to {@code read_committed}, so records
 *       of aborted producer transactions are never applied (see
 *       {@link KafkaConsumerConfig#DEFAULT_ISOLATION_LEVEL}).
 *   <li><b>Poll errors that cannot heal stop the consumer</b>: an error of {@code poll} that
 *       polling again would only repeat — an authorization or authentication failure, another
 *       live member with the same {@code group.instance.id} ({@code FencedInstanceIdException}),
 *       no valid committed offset with {@code auto.offset.reset=none} ({@code
 *       NoOffsetForPartitionException}, {@code OffsetOutOfRangeException}), an invalid group id, a
 *       broker too old for a setting ({@code UnsupportedVersionException}), and the rest of
 *       kafka-clients' {@code InvalidConfigurationException} family — is logged once at ERROR with
 *       what happened and what to do, the settled offsets are committed where the brokers still
 *       allow it, the clients are closed, and {@link #isRunning()} and {@link #health()}{@code
 *       .isReady()} turn false. Retriable errors ({@code RetriableException}: a leader moving, a
 *       coordinator not available) and any other {@code KafkaException} are logged and polled
 *       again after one second. Start a new consumer once the cause is fixed.
 *   <li><b>Health</b>: {@link #health()} for readiness probes — connected (the last poll returned
 *       without an error within {@code max.poll.interval.ms} and the last coordinator heartbeat was
 *       sent within {@code session.timeout.ms}), the assigned partitions, when the last poll
 *       returned, the records held for a retry backoff (one per paused partition) and the store's
 *       health.
 * </ul>
 *
 * <p>Thread-safe: {@link #start()}, {@link #close()} and {@link #isRunning()} may be called from
 * any thread. The consumer thread is a non-daemon thread named {@code idem-kafka-<group>-<n>}.
 * Logs under {@code io.idem.kafka.KafkaIdempotentConsumer}: INFO on start (with the effective
 * configuration), assignment and stop; WARN when an offset commit fails; ERROR when a record could
 * not be settled, when a poll fails, and once when a poll error that cannot heal stops the
 * consumer.
 */
public final class KafkaIdempotentConsumer implements BrokerConsumer {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaIdempotentConsumer.class);
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  /** Dead-letter header: the topic the record was consumed from, {@value}. */
  public static final String HEADER_ORIGINAL_TOPIC = "idem-original-topic";
  /** Dead-letter header: the record's partition (decimal), {@value}. */
  public static final String HEADER_ORIGINAL_PARTITION = "idem-original-partition";
  /** Dead-letter header: the record's offset (decimal), {@value}. */
  public static final String HEADER_ORIGINAL_OFFSET = "idem-original-offset";
  /** Dead-letter header: the record's timestamp (epoch milliseconds, decimal), {@value}. */
  public static final String HEADER_ORIGINAL_TIMESTAMP = "idem-original-timestamp";

  private final KafkaConsumerConfig config;
  private final IdempotentConsumer<?> pipeline;
  private final Function<Map<String, Object>, ? extends Consumer<byte[], byte[]>> consumerFactory;
  private final Function<Map<String, Object>, ? extends Producer<byte[], byte[]>> producerFactory;
  private final String groupId;
  private final Object lock = new Object();
  private @Nullable ConsumerLoop loop;
  private @Nullable Thread thread;
  private boolean started;
  private boolean closed;

  private KafkaIdempotentConsumer(
      KafkaConsumerConfig config,
      IdempotentConsumer<?> pipeline,
      Function<Map<String, Object>, ? extends Consumer<byte[], byte[]>> consumerFactory,
      Function<Map<String, Object>, ? extends Producer<byte[], byte[]>> producerFactory) {
    this.config = config;
    this.pipeline = pipeline;
    this.consumerFactory = consumerFactory;
    this.producerFactory = producerFactory;
    String configured = config.groupId();
    this.groupId = configured != null ? configured : pipeline.consumerGroup();
  }

  /**
   * Creates a consumer; nothing connects until {@link #start()}.
   *
   * @param config the Kafka settings; its group id defaults to {@code pipeline.consumerGroup()}
   * @param pipeline the idempotent pipeline every record goes through
   */
  public static KafkaIdempotentConsumer create(KafkaConsumerConfig config, IdempotentConsumer<?> pipeline) {
    return create(config, pipeline, KafkaConsumer::new, KafkaProducer::new);
  }

  /**
   * Creates a consumer whose Kafka clients come from the given factories, for instrumented or
   * wrapped clients (tracing, metrics). Each factory is called once by {@link #start()}, on the
   * calling thread, with the effective properties (the adapter's forced settings included); the
   * adapter owns the returned clients, uses the consumer from its own thread only, and closes
   * both.
   *
   * @param consumerFactory builds the {@code Consumer<byte[], byte[]>} from its properties
   * @param producerFactory builds the dead-letter {@code Producer<byte[], byte[]>} from its
   *     properties
   */
  public static KafkaIdempotentConsumer create(
      KafkaConsumerConfig config,
      IdempotentConsumer<?> pipeline,
      Function<Map<String, Object>, ? extends Consumer<byte[], byte[]>> consumerFactory,
      Function<Map<String, Object>, ? extends Producer<byte[], byte[]>> producerFactory) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(consumerFactory, "consumerFactory");
    Objects.requireNonNull(producerFactory, "producerFactory");
    if (config.groupId() != null && !config.groupId().equals(pipeline.consumerGroup())) {
      LOG.info("Kafka group.id '{}' differs from the pipeline's consumer group '{}': offsets are"
          + " committed for the first, processed-events rows written for the second",
          config.groupId(), pipeline.consumerGroup());
    }
    return new KafkaIdempotentConsumer(config, pipeline, consumerFactory, producerFactory);
  }

  /**
   * Creates the {@code KafkaConsumer} and the dead-letter {@code KafkaProducer}, subscribes to
   * the topics and starts the consumer thread; returns without waiting for partitions to be
   * assigned.
   *
   * @throws IllegalStateException when already started or closed
   * @throws IdempotencyException when Kafka refuses the configuration (for example an unknown
   *     consumer property value); nothing is left running
   */
  @Override
  public void start() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("consumer of group " + groupId + " is closed");
      }
      if (started) {
        throw new IllegalStateException("consumer of group " + groupId + " is already started");
      }
      Consumer<byte[], byte[]> consumer;
      Producer<byte[], byte[]> producer;
      try {
        consumer = Objects.requireNonNull(
            consumerFactory.apply(config.effectiveConsumerProperties(groupId)), "consumerFactory result");
      } catch (KafkaException e) {
        throw new IdempotencyException("Kafka refused the consumer configuration: " + e.getMessage(), e);
      }
      try {
        producer = Objects.requireNonNull(
            producerFactory.apply(config.effectiveProducerProperties(groupId)), "producerFactory result");
      } catch (KafkaException e) {
        consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
        throw new IdempotencyException("Kafka refused the dead-letter producer configuration: " + e.getMessage(), e);
      }
      ConsumerLoop newLoop =
          new ConsumerLoop(consumer, new DeadLetterPublisher(producer, config), pipeline, config, groupId);
      Thread newThread = new Thread(newLoop, "idem-kafka-" + groupId + "-" + INSTANCES.incrementAndGet());
      newThread.setUncaughtExceptionHandler(
          (t, e) -> LOG.error("consumer thread {} died", t.getName(), e));
      loop = newLoop;
      thread = newThread;
      started = true;
      newThread.start();
      LOG.info("Kafka consumer started: group '{}', topics {}, max attempts {}", groupId, config.topics(),
          pipeline.retryPolicy().maxAttempts());
      LOG.debug("Kafka consumer of group '{}': {}; {}", groupId, config, pipeline);
    }
  }

  /**
   * Stops gracefully: wakes the consumer thread, lets the in-flight record (in batch mode, the
   * in-flight batch: one transaction) finish and settle,
   * commits the settled offsets, then closes the consumer (leaving the group) and the producer.
   * Records fetched but not processed stay uncommitted for the next owner. Blocks up to
   * {@link KafkaConsumerConfig#shutdownTimeout()}; past it the thread is interrupted and an error
   * logged: a handler that stops on the interrupt has its record handed back uncommitted
   * ({@link io.idem.ProcessingOutcome#RELEASED}: not an attempt, never dead-lettered for it), and
   * the settled offsets are still committed within a few more seconds. Idempotent; a call from the consumer thread itself (a handler) only asks it to stop.
   */
  @Override
  public void close() {
    ConsumerLoop current;
    Thread currentThread;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      current = loop;
      currentThread = thread;
    }
    if (current == null || currentThread == null) {
      return;
    }
    long deadline = System.nanoTime() + config.shutdownTimeout().toNanos();
    current.requestClose(deadline);
    if (Thread.currentThread() == currentThread) {
      return;
    }
    if (!AdapterWorker.awaitAll(List.of(currentThread), deadline).isEmpty()) {
      LOG.error("consumer of group {} did not stop within {}; interrupting its thread (the"
          + " in-flight record stays uncommitted and will be delivered again)", groupId, config.shutdownTimeout());
      // the interrupted handler's record is handed back (not committed, not an attempt) and the
      // settled offsets are committed before the consumer leaves its group
      AdapterWorker.interruptAndAwait(List.of(currentThread), AdapterWorker.AFTER_INTERRUPT);
    }
    LOG.info("Kafka consumer of group {} stopped", groupId);
  }

  /**
   * True between {@link #start()} and {@link #close()}, while the consumer thread runs; false as
   * soon as its loop ended on its own (a {@link VirtualMachineError}, or a failure of the loop
   * itself), without waiting for the Kafka clients to close.
   */
  @Override
  public boolean isRunning() {
    synchronized (lock) {
      return started && !closed && loop != null && !loop.hasExited();
    }
  }

  /**
   * A snapshot for readiness probes; no broker or database call. Thread-safe.
   *
   * <ul>
   *   <li>{@code connected}: the consumer thread runs, its last {@code poll} returned without an
   *       error within {@code max.poll.interval.ms} (beyond it the client has left the group), and
   *       its last coordinator heartbeat was sent within {@code session.timeout.ms} (the client's
   *       {@code last-heartbeat-seconds-ago} metric, sampled on the consumer thread at most once a
   *       second; a consumer that has not sent one yet gets that long from its start to join).
   *       A broker outage thus shows after at most {@code session.timeout.ms} (45 s by default).
   *   <li>{@code consuming}: the assigned partitions, {@code topic-partition}; empty while the
   *       group has given this member none (more members than partitions, or a rebalance).
   *   <li>{@code lastReceive}: when the last poll returned without an error (records or not).
   *   <li>{@code heldForRetry}: records held back for a retry backoff — one per partition paused
   *       for it (its later records wait behind it).
   *   <li>{@code store}: {@link IdempotentConsumer#storeHealth()}.
   * </ul>
   *
   * <p>After a poll error that cannot heal, {@code running} and {@code connected} are false.
   */
  @Override
  public ConsumerHealth health() {
    ConsumerLoop current;
    synchronized (lock) {
      current = loop;
    }
    boolean running = isRunning();
    if (current == null) {
      return new ConsumerHealth(running, false, List.of(), null, 0, pipeline.storeHealth());
    }
    return new ConsumerHealth(
        running,
        running && current.connected(),
        running ? current.assignedPartitions() : List.of(),
        current.lastPollAt(),
        current.heldForRetry(),
        pipeline.storeHealth());
  }

  /**
   * What stopped the consumer on its own — a poll error that cannot heal (see the class
   * documentation) or an unexpected error of its thread; empty before {@link #start()}, while it
   * runs and when it was stopped by {@link #close()}. Kept after {@code close()}. Thread-safe.
   */
  public Optional<Throwable> failure() {
    ConsumerLoop current;
    synchronized (lock) {
      current = loop;
    }
    return current == null ? Optional.empty() : Optional.ofNullable(current.failure());
  }

  /** The Kafka {@code group.id} in use. */
  public String groupId() {
    return groupId;
  }

  /** The configuration. */
  public KafkaConsumerConfig config() {
    return config;
  }

  @Override
  public String toString() {
    return "KafkaIdempotentConsumer[group=" + groupId + ", topics=" + config.topics() + "]";
  }
}
