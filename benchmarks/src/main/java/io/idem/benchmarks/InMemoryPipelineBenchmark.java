package io.idem.benchmarks;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.testkit.InMemoryProcessedEventStore;
import io.idem.testkit.InMemoryTransaction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The pipeline's own cost per message, without a database or broker: key extraction, SHA-256 of
 * the payload, listeners, on the in-memory store. One thread.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 5)
@Fork(value = 1, jvmArgsAppend = "-Xmx512m")
@State(Scope.Benchmark)
public class InMemoryPipelineBenchmark {
  private static final byte[] PAYLOAD =
      "{\"type\":\"OrderPaid\",\"orderId\":\"o-1\",\"amountCents\":4200,\"currency\":\"EUR\"}"
          .getBytes(StandardCharsets.UTF_8);
  private static final Acknowledgement NO_BROKER = new Acknowledgement() {
    @Override public void ack() {}
    @Override public void retry(Duration delay) {}
    @Override public void deadLetter(DeadLetterReason reason) {}
  };

  private final AtomicLong sequence = new AtomicLong();
  // every key is new; the stores are emptied every 100,000 keys so the heap stays flat
  private final InMemoryProcessedEventStore headerStore = new InMemoryProcessedEventStore();
  private final InMemoryProcessedEventStore payloadStore = new InMemoryProcessedEventStore();
  private final IdempotentConsumer<InMemoryTransaction> headerKeys =
      IdempotentConsumer.builder(headerStore)
          .consumerGroup("bench").handler((message, tx) -> { }).build();
  private final IdempotentConsumer<InMemoryTransaction> payloadKeys =
      IdempotentConsumer.builder(payloadStore)
          .consumerGroup("bench").handler((message, tx) -> { })
          .keyExtractor(IdempotencyKeyExtractor.jsonPointer("/orderId"))
          .build();

  /** The pipeline alone (header key, SHA-256, listeners) on the in-memory store. */
  @Benchmark
  public ProcessingOutcome headerKey() {
    long n = next(headerStore);
    return headerKeys.process(message("m-" + n), NO_BROKER);
  }

  /** The same with the key read from the JSON payload (Jackson parse per message). */
  @Benchmark
  public ProcessingOutcome jsonPointerKey() {
    byte[] payload = ("{\"orderId\":\"j-" + next(payloadStore) + "\",\"amountCents\":4200}")
        .getBytes(StandardCharsets.UTF_8);
    return payloadKeys.process(InboundMessage.builder("orders", payload).build(), NO_BROKER);
  }

  private long next(InMemoryProcessedEventStore store) {
    long n = sequence.incrementAndGet();
    if (n % 100_000 == 0) {
      store.purge(Instant.MAX, Integer.MAX_VALUE);
    }
    return n;
  }

  private static InboundMessage message(String key) {
    return InboundMessage.builder("orders", PAYLOAD).header("idempotency-key", key).build();
  }
}
