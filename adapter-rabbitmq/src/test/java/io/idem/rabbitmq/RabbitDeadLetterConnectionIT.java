package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.DeadLetterCause;
import io.idem.IdempotentConsumer;
import io.idem.NonRetryableException;
import io.idem.testkit.DeadLetteredMessage;
import java.time.Duration;
import java.util.List;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * Dead-letter copies go out on a connection of their own: RabbitMQ blocks every publishing
 * connection during a memory or disk alarm, and the consuming connection must go on acking. The
 * copy is still confirmed before the original is acked.
 */
class RabbitDeadLetterConnectionIT {

  @Test
  void theConsumingConnectionNeverPublishesAndTheCopyIsConfirmedBeforeTheAck() throws Exception {
    try (TestQueue queue = TestQueue.declare("dl-connection", RabbitQueueType.CLASSIC);
        TestDatabase db = TestDatabase.fresh("rabbit_dlconn")) {
      queue.publish("doomed-1", "{}");
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
          .consumerGroup("dl-connection")
          .handler((message, session) -> {
            throw new NonRetryableException("cannot be applied");
          })
          .build();
      RecordingConnectionFactory factory = new RecordingConnectionFactory();
      RabbitConsumerConfig config = queue.configBuilder().connectionName("idem-test-" + queue.name).build();

      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline, factory)) {
        consumer.start();
        await("dead letter").atMost(Duration.ofSeconds(30)).until(() -> !queue.deadLetters().isEmpty());
        await("original acked").atMost(Duration.ofSeconds(30))
            .until(() -> !factory.ops("basicAck").isEmpty());
      }

      List<RecordingConnectionFactory.Op> consumes = factory.ops("basicConsume");
      List<RecordingConnectionFactory.Op> publishes = factory.ops("basicPublish");
      assertThat(consumes).hasSize(1);
      assertThat(publishes).hasSize(1);
      int consuming = consumes.get(0).connectionNumber();
      assertThat(publishes.get(0).connectionNumber()).as("published on another connection").isNotEqualTo(consuming);
      assertThat(publishes.get(0).connection()).isEqualTo(config.connectionName() + ":dead-letters");
      assertThat(factory.ops).filteredOn(op -> op.connectionNumber() == consuming)
          .extracting(RecordingConnectionFactory.Op::method)
          .doesNotContain("basicPublish", "confirmSelect")
          .contains("basicAck");
      assertThat(factory.connections.get(consuming)).isNotSameAs(factory.connections.get(publishes.get(0).connectionNumber()));
      // the publish, its confirm, then the ack: in that order
      List<String> order = factory.ops.stream().map(RecordingConnectionFactory.Op::method)
          .filter(m -> List.of("basicPublish", "waitForConfirms", "basicAck").contains(m)).toList();
      assertThat(order).containsExactly("basicPublish", "waitForConfirms", "basicAck");

      DeadLetteredMessage letter = queue.deadLetters().get(0);
      assertThat(letter.cause()).isEqualTo(DeadLetterCause.NON_RETRYABLE.name());
      assertThat(letter.detail()).contains("cannot be applied");
      assertThat(queue.ready()).isZero();
    }
  }
}
