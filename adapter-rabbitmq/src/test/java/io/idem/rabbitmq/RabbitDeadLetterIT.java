package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Retries with backoff, then dead-lettering with the reason; and a dead-letter copy that fails. */
class RabbitDeadLetterIT {
  private static final Duration BACKOFF = Duration.ofMillis(300);

  private static RetryPolicy threeAttempts() {
    return RetryPolicy.builder().maxAttempts(3).initialBackoff(BACKOFF).maxBackoff(BACKOFF)
        .multiplier(1.0).jitter(0).build();
  }

  @ParameterizedTest
  @EnumSource(RabbitQueueType.class)
  void pastMaxAttemptsTheMessageIsDeadLetteredWithTheReasonAfterBackoffs(RabbitQueueType type)
      throws Exception {
    try (TestQueue queue = TestQueue.declare("dead-letter", type);
        TestDatabase db = TestDatabase.fresh("rabbit_dlq")) {
      queue.publish(Map.of("idempotency-key", "poison-1", "x-origin", "dead-letter-it"),
          "{\"poison\":true}".getBytes(StandardCharsets.UTF_8));
      List<Integer> attempts = new CopyOnWriteArrayList<>();
      List<Instant> received = new CopyOnWriteArrayList<>();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("dlq")
          .retryPolicy(threeAttempts())
          .handler((message, session) -> {
            attempts.add(message.deliveryAttempt());
            received.add(message.receivedAt());
            TestDatabase.record(session, "poison-1", message.deliveryAttempt());
            throw new IllegalStateException("poison payload");
          })
          .build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        await("dead letter").atMost(Duration.ofSeconds(30)).until(() -> !queue.deadLetters().isEmpty());
      }

      // quorum: x-delivery-count + 1; classic: counted by the adapter
      assertThat(attempts).containsExactly(1, 2, 3);
      for (int i = 1; i < received.size(); i++) {
        assertThat(Duration.between(received.get(i - 1), received.get(i)))
            .as("redelivery %d came no sooner than the backoff", i + 1)
            .isGreaterThanOrEqualTo(BACKOFF);
      }
      List<DeadLetteredMessage> dead = queue.deadLetters();
      assertThat(dead).hasSize(1); // Idem's copy only: no second, reasonless copy from a reject
      DeadLetteredMessage letter = dead.get(0);
      assertThat(letter.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
      assertThat(letter.detail()).contains("attempt 3 of 3", "poison payload");
      assertThat(letter.headers())
          .containsEntry("x-origin", "dead-letter-it")
          .containsEntry("idempotency-key", "poison-1")
          .containsEntry(DeadLetterReason.HEADER_ATTEMPT, "3")
          .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, "dlq")
          .containsEntry(DeadLetterReason.HEADER_EXCEPTION, IllegalStateException.class.getName())
          .doesNotContainKey("x-first-death-reason");
      assertThat(new String(letter.payload(), StandardCharsets.UTF_8)).isEqualTo("{\"poison\":true}");
      assertThat(db.effects("poison-1")).isZero();
      assertThat(queue.ready()).isZero();
    }
  }

  @Test
  void aDeadLetterCopyRoutedNowhereLeavesTheOriginalInTheQueue() throws Exception {
    try (TestQueue queue = TestQueue.undeclared("dead-letter-unroutable", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_dlq")) {
      // a dead-letter exchange with no queue bound to it
      queue.channel().exchangeDeclare(queue.name + ".dlx", BuiltinExchangeType.FANOUT, true);
      queue.channel().queueDeclare(queue.name, true, false, false, queue.config().queueArguments());
      queue.publish("doomed-1", "{}");
      AtomicInteger deadLetterAttempts = new AtomicInteger();
      AtomicInteger deadLettered = new AtomicInteger();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("dlq")
          .handler((message, session) -> {
            throw new NonRetryableException("cannot be applied");
          })
          .listener(new IdempotencyListener() {
            @Override
            public void onAcknowledgementFailure(InboundMessage message, @Nullable IdempotencyKey key,
                ProcessingOutcome intended, RuntimeException failure, Duration elapsed) {
              if (intended == ProcessingOutcome.DEAD_LETTERED) {
                deadLetterAttempts.incrementAndGet();
              }
            }

            @Override
            public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
              deadLettered.incrementAndGet(); // only once a copy is stored: never here
            }
          })
          .build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline)) {
        consumer.start();
        // refused, returned to the queue after the pause, delivered and refused again
        await("repeated dead-letter attempts").atMost(Duration.ofSeconds(30))
            .until(() -> deadLetterAttempts.get() >= 2);
        assertThat(consumer.isRunning()).isTrue();
        assertThat(deadLettered).as("no copy stored, no onDeadLetter").hasValue(0);
      }
      await("original back in the queue").atMost(Duration.ofSeconds(30)).until(() -> queue.ready() == 1);
      assertThat(db.effects("doomed-1")).isZero();
    }
  }
}
