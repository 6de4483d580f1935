package io.idem.rabbitmq;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.RabbitFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * {@link RabbitProcessKillingMessageIT}'s consumer, run in a child JVM: consumes {@code args[0]}
 * (queue type {@code args[1]}) into schema {@code args[2]} for consumer group {@code args[3]}
 * with maxAttempts 3, until file {@code args[4]} exists. The handler of key {@code args[6]} kills
 * the process: {@code args[5]} {@code HALT} calls {@code Runtime.halt(1)} (like kill -9: no
 * finally, no ack, no hook); {@code OOM} throws an OutOfMemoryError, which stops the consumer's
 * worker while the JVM lives on — this child then closes that consumer and starts a new one, as
 * an application watching {@code isRunning()} would. Prints {@code POISON-RUN}, {@code RESTART}
 * and {@code OUTCOME <key> <outcome>}.
 */
public final class RabbitPoisonChild {
  static final int MAX_ATTEMPTS = 3;

  private RabbitPoisonChild() {}

  public static void main(String[] args) throws Exception {
    String queue = args[0];
    RabbitQueueType type = RabbitQueueType.valueOf(args[1]);
    Path stopFile = Path.of(args[4]);
    boolean halt = "HALT".equals(args[5]);
    String poison = args[6];
    try (TestDatabase db = TestDatabase.open(args[2])) {
      MessageHandler<SqlSession> recording = TestDatabase.recordingHandler();
      MessageHandler<SqlSession> handler = (message, session) -> {
        if (poison.equals(message.header("idempotency-key"))) {
          System.out.println("POISON-RUN");
          System.out.flush();
          if (halt) {
            Runtime.getRuntime().halt(1);
          }
          throw new OutOfMemoryError("simulated: the handler of " + poison + " ran out of memory");
        }
        recording.handle(message, session);
      };
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup(args[3])
          .handler(handler)
          .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS)
              .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).build())
          .listener(new IdempotencyListener() {
            @Override
            public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
                ProcessingOutcome outcome, Duration elapsed) {
              System.out.println("OUTCOME " + (key == null ? "-" : key.value()) + " " + outcome);
            }
          })
          .build();
      RabbitConsumerConfig.Builder config = RabbitConsumerConfig.builder(queue)
          .uri(RabbitFixture.shared().uri())
          .queueType(type)
          .connectionName("idem-test-poison-child-" + queue);
      if (type == RabbitQueueType.QUORUM) {
        config.deliveryLimit(TestQueue.DELIVERY_LIMIT);
      }
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config.build(), pipeline);
      try {
        consumer.start();
        System.out.println("READY");
        while (!Files.exists(stopFile)) {
          if (!consumer.isRunning()) { // an Error stopped it: replace it, the JVM lives on
            consumer.close();
            System.out.println("RESTART");
            consumer = RabbitIdempotentConsumer.create(config.build(), pipeline);
            consumer.start();
          }
          Thread.sleep(50);
        }
      } finally {
        consumer.close();
      }
      System.out.println("CLOSED");
    }
  }
}
