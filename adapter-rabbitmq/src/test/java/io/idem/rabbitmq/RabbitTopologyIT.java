package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyException;
import io.idem.IdempotentConsumer;
import io.idem.RetryPolicy;
import io.idem.testkit.DeadLetteredMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** What the adapter declares, verifies and refuses on start. */
class RabbitTopologyIT {
  private static TestDatabase db;

  @BeforeAll
  static void openDatabase() {
    db = TestDatabase.fresh("rabbit_topology");
  }

  @AfterAll
  static void closeDatabase() {
    db.close();
  }

  private static IdempotentConsumer<SqlSession> pipeline(RetryPolicy retry) {
    return IdempotentConsumer.builder(db.store)
        .consumerGroup("topology")
        .retryPolicy(retry)
        .handler((message, session) -> {
          throw new IllegalStateException("always fails");
        })
        .build();
  }

  private static IdempotentConsumer<SqlSession> pipeline() {
    return pipeline(RetryPolicy.ofDefaults());
  }

  @Test
  void quorumQueueWithDeliveryLimitAndNoDeadLetterExchangeRefusesToStart() throws Exception {
    try (TestQueue queue = TestQueue.undeclared("no-dlx", RabbitQueueType.QUORUM)) {
      queue.channel().exchangeDeclare(queue.name + ".dlx", BuiltinExchangeType.FANOUT, true);
      queue.channel().queueDeclare(queue.name, true, false, false,
          Map.of("x-queue-type", "quorum", "x-delivery-limit", 5));
      RabbitConsumerConfig config = queue.configBuilder().deliveryLimit(5).build();
      RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline());

      assertThatThrownBy(consumer::start)
          .isInstanceOf(IdempotencyException.class)
          .hasMessageContaining("quorum queue '" + queue.name + "' has x-delivery-limit=5")
          .hasMessageContaining("no dead-letter exchange")
          .hasMessageContaining("drop");
      assertThat(consumer.isRunning()).isFalse();
      assertThatThrownBy(consumer::start).isInstanceOf(IllegalStateException.class);
      consumer.close();
    }
  }

  @Test
  void queueWithoutDeadLetterExchangeRefusesToStartWhateverTheConfigSays() throws Exception {
    try (TestQueue queue = TestQueue.undeclared("no-dlx-unknown", RabbitQueueType.QUORUM)) {
      queue.channel().exchangeDeclare(queue.name + ".dlx", BuiltinExchangeType.FANOUT, true);
      queue.channel().queueDeclare(queue.name, true, false, false,
          Map.of("x-queue-type", "quorum", "x-delivery-limit", 5));
      // the configuration does not know about the limit: RabbitMQ's equivalence check still refuses
      RabbitConsumerConfig config = RabbitConsumerConfig.builder(queue.name)
          .uri(io.idem.fixtures.RabbitFixture.shared().uri())
          .queueType(RabbitQueueType.QUORUM)
          .build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline())) {
        assertThatThrownBy(consumer::start)
            .isInstanceOf(IdempotencyException.class)
            .hasMessageContaining(queue.name);
      }
    }
  }

  @Test
  void missingQueueOrDeadLetterExchangeRefusesToStart() throws Exception {
    try (TestQueue queue = TestQueue.undeclared("missing", RabbitQueueType.CLASSIC)) {
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline())) {
        assertThatThrownBy(consumer::start)
            .isInstanceOf(IdempotencyException.class)
            .hasMessageContaining("queue '" + queue.name + "' does not exist");
      }
      queue.channel().queueDeclare(queue.name, true, false, false, queue.config().queueArguments());
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(queue.config(), pipeline())) {
        assertThatThrownBy(consumer::start)
            .isInstanceOf(IdempotencyException.class)
            .hasMessageContaining("dead-letter exchange '" + queue.name + ".dlx'")
            .hasMessageContaining("does not exist");
      }
    }
  }

  @Test
  void queueWithOtherArgumentsRefusesToStart() throws Exception {
    try (TestQueue queue = TestQueue.declare("other-args", RabbitQueueType.QUORUM)) {
      // the queue is quorum; the configuration says classic
      RabbitConsumerConfig classic = RabbitConsumerConfig.builder(queue.name)
          .uri(io.idem.fixtures.RabbitFixture.shared().uri())
          .build();
      assertThatThrownBy(() -> RabbitIdempotentConsumer.create(classic, pipeline()).start())
          .isInstanceOf(IdempotencyException.class)
          .hasMessageContaining("exists with other arguments")
          .hasMessageContaining("x-queue-type");
    }
  }

  @Test
  void aDeliveryLimitBelowMaxAttemptsIsDeadLetteredByIdemWithItsReasonBeforeRabbitMqActs() throws Exception {
    try (TestQueue queue = TestQueue.undeclared("declared", RabbitQueueType.QUORUM)) {
      RabbitConsumerConfig config = queue.configBuilder()
          .deliveryLimit(1)
          .declareTopology(true)
          .build();
      RetryPolicy manyAttempts = RetryPolicy.builder().maxAttempts(10)
          .initialBackoff(Duration.ofMillis(50)).maxBackoff(Duration.ofMillis(50)).jitter(0).build();
      try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, pipeline(manyAttempts))) {
        consumer.start();
        queue.publish("limited-1", "{}");
        queue.publish(Map.of("no-key", "here"), "{}".getBytes(StandardCharsets.UTF_8));
        await("both dead-lettered").atMost(Duration.ofSeconds(30)).until(() -> queue.deadLetters().size() == 2);
      }
      List<DeadLetteredMessage> dead = queue.deadLetters();
      // Idem dead-letters at the lower limit (x-delivery-limit=1, not maxAttempts=10), with its
      // reason, before RabbitMQ's own dead-lettering (which carries none) could act
      assertThat(dead).anySatisfy(d -> {
        assertThat(d.headers()).containsEntry("idempotency-key", "limited-1")
            .doesNotContainKey("x-first-death-reason");
        assertThat(d.cause()).isEqualTo(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name());
        assertThat(d.detail()).contains("broker's own limit 1");
      });
      // Idem's dead-lettering, with its reason, into the same declared dead-letter queue
      assertThat(dead).anySatisfy(d -> assertThat(d.cause()).isEqualTo(DeadLetterCause.NO_KEY.name()));
      assertThat(dead).filteredOn(d -> d.cause().equals(DeadLetterCause.NO_KEY.name()))
          .allSatisfy(d -> assertThat(d.detail()).contains("no header 'idempotency-key'"));
      assertThat(queue.ready()).isZero();
      // the declared queue now verifies as configured
      try (RabbitIdempotentConsumer verifying = RabbitIdempotentConsumer.create(
          queue.configBuilder().deliveryLimit(1).build(), pipeline())) {
        verifying.start();
        assertThat(verifying.isRunning()).isTrue();
      }
    }
  }
}
