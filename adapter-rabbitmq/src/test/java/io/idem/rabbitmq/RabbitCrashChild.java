package io.idem.rabbitmq;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.CrashInjector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The crash tests' victim, run in a child JVM: consumes {@code args[0]} (queue type
 * {@code args[1]}) into schema {@code args[2]} for consumer group {@code args[3]} with a
 * {@link CrashInjector} configured by {@code -Didem.crash.point}, prints {@code OUTCOME <key>
 * <outcome> <attempt>} per settled delivery, and closes gracefully once file {@code args[4]}
 * exists. {@code -Didem.rabbit.maxBatchSize} (default 1, per-message mode) sets the batch size.
 */
public final class RabbitCrashChild {
  private RabbitCrashChild() {}

  public static void main(String[] args) throws Exception {
    String queue = args[0];
    RabbitQueueType type = RabbitQueueType.valueOf(args[1]);
    Path stopFile = Path.of(args[4]);
    try (TestDatabase db = TestDatabase.open(args[2])) {
      CrashInjector crashes = CrashInjector.fromSystemProperties();
      // the crash points inside broker calls: the channel call returned (the broker took the ack;
      // the dead-letter copy was confirmed), the JVM halts before the adapter goes on
      RecordingConnectionFactory factory = new RecordingConnectionFactory().crashingAt(crashes);
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup(args[3])
          .handler(TestDatabase.recordingHandler())
          .listener(crashes)
          .listener(new IdempotencyListener() {
            @Override
            public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
                ProcessingOutcome outcome, Duration elapsed) {
              System.out.println("OUTCOME " + (key == null ? "-" : key.value()) + " " + outcome
                  + " " + message.deliveryAttempt());
            }
          })
          .build();
      RabbitConsumerConfig.Builder config = RabbitConsumerConfig.builder(queue)
          .uri(RabbitFixture.shared().uri())
          .queueType(type)
          .connectionName("idem-test-crash-child-" + queue)
          .maxBatchSize(Integer.getInteger("idem.rabbit.maxBatchSize", 1));
      if (type == RabbitQueueType.QUORUM) {
        config.deliveryLimit(TestQueue.DELIVERY_LIMIT);
      }
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config.build(), pipeline, factory)) {
        consumer.start();
        System.out.println("READY");
        while (!Files.exists(stopFile)) {
          Thread.sleep(50);
        }
      }
      System.out.println("CLOSED");
    }
  }
}
