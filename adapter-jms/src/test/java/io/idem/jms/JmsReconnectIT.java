package io.idem.jms;

import static io.idem.jms.JmsTestDatabase.attempts;
import static io.idem.jms.JmsTestDatabase.pipeline;
import static io.idem.jms.JmsTestDatabase.unique;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.jms.JmsTestDatabase.Effects;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Workers whose connections the broker closes reconnect and go on consuming. */
class JmsReconnectIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  private JmsHarness harness;
  private BrokerConsumer consumer;

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (harness != null) {
      harness.close();
    }
  }

  private void publish(String key) {
    harness.publish(Map.of("idempotency-key", key), "{}".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void workersReconnectAfterTheBrokerDroppedTheirConnections() {
    harness = new JmsHarness(unique("reconnect"), b -> b.concurrency(2));
    Effects effects = Effects.newRun();
    consumer = harness.newConsumer(pipeline(unique("g"),
        (message, session) -> effects.record(session, message.header("idempotency-key")), attempts(3)));
    consumer.start();
    publish("before");
    await().atMost(TIMEOUT).until(() -> effects.count("before") == 1);

    assertThat(harness.artemis.closeConsumerConnections(harness.queue)).isTrue();
    publish("after");

    await().atMost(TIMEOUT).until(() -> effects.count("after") == 1);
    assertThat(consumer.isRunning()).isTrue();
    consumer.close();
    assertThat(harness.pendingCount()).isZero();
    assertThat(effects.doubled()).isZero();
  }
}
