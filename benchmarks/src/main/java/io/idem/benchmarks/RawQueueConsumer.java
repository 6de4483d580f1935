package io.idem.benchmarks;

import java.time.Duration;

/**
 * A plain consumer of a queue broker (RabbitMQ, SQS, JMS), no dedup: one thread named {@code
 * raw-consumer-<destination>} that receives, writes through an {@link EffectsWriter} and
 * acknowledges after the commit, until {@link #close()}. Per message: a transaction of its own,
 * then that message's ack. Batched: what one receive (or the prefetch window) holds, up to the
 * batch size, in one transaction and one multi-row INSERT, then one acknowledgement for all of
 * them. Producer retries are applied twice: a non-zero {@code doubled} is expected.
 */
abstract class RawQueueConsumer implements AutoCloseable {
  /** How long one receive waits for a message before the loop checks whether it was closed. */
  static final Duration RECEIVE_WAIT = Duration.ofMillis(500);

  protected final BenchDatabase db;
  protected final Progress progress;
  protected final boolean batched;
  protected final int batchSize;
  private final Thread thread;
  private volatile boolean running = true;

  RawQueueConsumer(String destination, BenchDatabase db, Progress progress, boolean batched, int batchSize) {
    this.db = db;
    this.progress = progress;
    this.batched = batched;
    this.batchSize = batchSize;
    this.thread = new Thread(this::run, "raw-consumer-" + destination);
  }

  /** Connects and subscribes (on the caller's thread), then starts consuming. */
  final RawQueueConsumer start() throws Exception {
    open();
    thread.start();
    return this;
  }

  /** Connects to the broker and subscribes. */
  abstract void open() throws Exception;

  /** One receive (waiting at most about {@link #RECEIVE_WAIT}), what it got applied and acknowledged. */
  abstract void receiveAndApply(EffectsWriter effects) throws Exception;

  /** Closes the broker side (on the consumer thread, after its last receive). */
  abstract void shut();

  private void run() {
    try (EffectsWriter effects = new EffectsWriter(db)) {
      while (running) {
        receiveAndApply(effects);
      }
    } catch (Exception e) {
      if (running) {
        System.err.println(thread.getName() + " failed: " + e);
      }
    } finally {
      shut();
    }
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    thread.join(30_000);
  }
}
