package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyException;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.ArtemisFixture.AddressPolicy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The consumer refuses to start when it can tell that the dead-letter queue is missing, because
 * Artemis drops a message whose dead-letter address has no queue (AMQ222148).
 */
class JmsMissingDeadLetterQueueIT {
  private final ArtemisFixture artemis = ArtemisFixture.shared();
  private final String queue = unique("no-dlq");
  private final String deadLetterQueue = queue + ".dlq";

  @AfterEach
  void tearDown() {
    artemis.deleteQueue(queue);
    artemis.deleteQueue(deadLetterQueue);
    artemis.removeAddressSettings(queue);
    artemis.removeAddressSettings(deadLetterQueue);
  }

  private JmsIdempotentConsumer consumer() {
    return JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(artemis.connectionFactory(), queue, deadLetterQueue).build(),
        pipeline(unique("g"), (message, session) -> { }, attempts(3)));
  }

  @Test
  void refusesToStartWhenTheDeadLetterQueueDoesNotExist() {
    // no auto-creation for either name, as on a locked-down broker
    AddressPolicy strict = AddressPolicy.deadLetterTo(deadLetterQueue).withAutoCreateQueues(false);
    artemis.addressSettings(queue, strict);
    artemis.addressSettings(deadLetterQueue, strict);
    artemis.createQueue(queue);

    JmsIdempotentConsumer consumer = consumer();
    assertThatThrownBy(consumer::start)
        .isInstanceOf(IdempotencyException.class)
        .hasMessageContaining("dead-letter queue '" + deadLetterQueue + "'")
        .hasMessageContaining("does not exist")
        .hasMessageContaining("drops a message");
    assertThat(consumer.isRunning()).isFalse();
    consumer.close(); // idempotent after a failed start

    artemis.createQueue(deadLetterQueue);
    JmsIdempotentConsumer second = consumer();
    second.start();
    assertThat(second.isRunning()).isTrue();
    second.close();
    assertThat(second.isRunning()).isFalse();
  }

  @Test
  void skipsTheCheckWhenVerificationIsOff() {
    AddressPolicy strict = AddressPolicy.deadLetterTo(deadLetterQueue).withAutoCreateQueues(false);
    artemis.addressSettings(queue, strict);
    artemis.addressSettings(deadLetterQueue, strict);
    artemis.createQueue(queue);
    // the dead-letter queue is NOT created (issue 16: creating it let this test pass with the
    // check on). Skipping the check leaves the provider to refuse the dead-letter producer: the
    // start fails with Artemis' own error, not with the check's explanation.
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(artemis.connectionFactory(), queue, deadLetterQueue)
            .verifyDeadLetterQueue(false).build(),
        pipeline(unique("g"), (message, session) -> { }, attempts(3)));
    assertThatThrownBy(consumer::start)
        .isInstanceOf(IdempotencyException.class)
        .hasMessageStartingWith("could not start consuming " + queue)
        .hasMessageContaining(deadLetterQueue)
        .hasMessageNotContaining("verifyDeadLetterQueue(false)");
    assertThat(consumer.isRunning()).isFalse();
    assertThat(artemis.queueExists(deadLetterQueue)).isFalse();
  }
}
