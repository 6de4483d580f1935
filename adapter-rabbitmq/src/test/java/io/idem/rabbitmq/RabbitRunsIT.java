package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.spi.ForwardingProcessedEventStore;
import io.idem.spi.NextClaim;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.TransactionRun;
import io.idem.spi.TransactionWork;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Per-message mode on RabbitMQ runs its deliveries as a {@link io.idem.MessageRun}: a worker takes
 * the delivery buffered behind the one committing, and that delivery's claim travels with the
 * COMMIT (docs/ADAPTERS.md, "Runs"). Checked through the store's {@link TransactionRun}: claims are
 * carried, and every message is still applied exactly once — also when the delivery announced next
 * fails its first attempt, when producer duplicates sit right behind their original, and with
 * several workers taking from one buffer.
 */
class RabbitRunsIT {
  private static final int MESSAGES = 60;

  @ParameterizedTest(name = "{0} worker(s)")
  @ValueSource(ints = {1, 3})
  void perMessageDeliveriesCarryTheNextClaimWithTheCommitAndAreAppliedOnce(int workers) throws Exception {
    try (TestQueue queue = TestQueue.declare("runs", RabbitQueueType.QUORUM);
        TestDatabase db = TestDatabase.fresh("rabbit_runs")) {
      CountingStore store = new CountingStore(db.store);
      Set<String> failedOnce = ConcurrentHashMap.newKeySet();
      AtomicInteger settled = new AtomicInteger();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
          .consumerGroup("runs")
          .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(50))
              .maxBackoff(Duration.ofMillis(50)).multiplier(1.0).jitter(0).build())
          .handler((message, session) -> {
            String key = String.valueOf(message.header("idempotency-key"));
            if (key.endsWith("7") && failedOnce.add(key)) {
              throw new IllegalStateException("first attempt of " + key + " fails");
            }
            TestDatabase.record(session, key, message.deliveryAttempt());
          })
          .listener(new IdempotencyListener() {
            @Override
            public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key, ProcessingOutcome outcome,
                Duration elapsed) {
              if (outcome == ProcessingOutcome.PROCESSED || outcome == ProcessingOutcome.DUPLICATE) {
                settled.incrementAndGet();
              }
            }
          })
          .build();
      // published before the consumer starts, so that the prefetch fills the buffer behind each delivery
      int published = 0;
      for (int i = 0; i < MESSAGES; i++) {
        queue.publish("run-" + i, "{\"n\":" + i + "}");
        published++;
        if (i % 10 == 3) {
          queue.publish("run-" + i, "{\"n\":" + i + "}"); // a producer retry right behind its original
          published++;
        }
      }
      RabbitConsumerConfig config = queue.configBuilder().maxBatchSize(1).prefetch(100).concurrency(workers).build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline)) {
        consumer.start();
        int all = published;
        await("every delivery settled").atMost(Duration.ofSeconds(60)).until(() -> settled.get() >= all);
      }
      assertThat(queue.ready()).as("returned unacknowledged by close()").isZero();
      for (int i = 0; i < MESSAGES; i++) {
        assertThat(db.effects("run-" + i)).as("effects of run-%d", i).isEqualTo(1);
      }
      assertThat(db.totalEffects()).isEqualTo(MESSAGES);
      assertThat(failedOnce).hasSize(6);
      assertThat(store.carried.get())
          .as("claims announced ahead, to travel with the previous COMMIT")
          .isPositive();
      assertThat(queue.deadLetters()).isEmpty();
    }
  }

  /** Counts the claims the runs of the pipeline were told about ahead of their transaction. */
  private static final class CountingStore extends ForwardingProcessedEventStore<SqlSession> {
    final AtomicInteger carried = new AtomicInteger();

    CountingStore(ProcessedEventStore<SqlSession> delegate) {
      super(delegate);
    }

    @Override
    public TransactionRun<SqlSession> openRun() {
      TransactionRun<SqlSession> run = delegate().openRun();
      return new TransactionRun<>() {
        @Override
        public <T> T inTransaction(TransactionWork<SqlSession, T> work, IdempotencyKey key,
            byte[] payloadFingerprint, Supplier<@Nullable NextClaim> next) throws Exception {
          return run.inTransaction(work, key, payloadFingerprint, () -> {
            NextClaim claim = next.get();
            if (claim != null) {
              carried.incrementAndGet();
            }
            return claim;
          });
        }

        @Override
        public void close() {
          run.close();
        }
      };
    }
  }
}
