package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.idem.fixtures.RabbitFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a quorum queue does differently on the RabbitMQ under test — 3.10 (the machine's) or 4.0
 * ({@code .ci/run} runs this module again on 4.0.5): each test reads the server's version and
 * asserts that version's behaviour, as observed on 3.10.8 and 4.0.5, so a broker that changes it
 * fails here rather than somewhere in the adapter's tests. docs/BROKERS.md has the table; the
 * adapter reads the attempt from these headers (docs/BROKERS.md, "Counting differs by version").
 */
class RabbitVersionDifferencesIT {
  private static final Duration GET_WAIT = Duration.ofSeconds(10);

  @Test
  void theFirstDeliveryCarriesXDeliveryCountZeroOn3xAndNoCounterOn4() throws Exception {
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("idem-test-versions-first");
        Channel channel = connection.createChannel()) {
      String queue = quorumQueue(channel, "first");
      try {
        channel.basicPublish("", queue, null, "m".getBytes(StandardCharsets.UTF_8));
        GetResponse first = get(channel, queue);
        Map<String, Object> headers = first.getProps().getHeaders();
        if (major(connection) >= 4) {
          // 4.0: no x-delivery-count until the first return (and no x-acquired-count on 4.0.5)
          assertThat(headers == null ? Map.of() : headers).doesNotContainKey("x-delivery-count");
        } else {
          assertThat(headers).containsEntry("x-delivery-count", 0L);
        }
        // before 4.3, a nack(requeue) is counted like a reject
        channel.basicNack(first.getEnvelope().getDeliveryTag(), false, true);
        assertThat(get(channel, queue).getProps().getHeaders()).containsEntry("x-delivery-count", 1L);
      } finally {
        channel.queueDelete(queue);
      }
    }
  }

  @Test
  void aQuorumQueueWithoutADeliveryLimitDeadLettersAtTheDefault20On4AndNeverOn3x() throws Exception {
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("idem-test-versions-limit");
        Channel channel = connection.createChannel()) {
      String queue = TestQueue.unique("versions-limit");
      String dlx = queue + ".dlx";
      String dlq = queue + ".dlq";
      channel.exchangeDeclare(dlx, "fanout", true);
      channel.queueDeclare(dlq, true, false, false, null);
      channel.queueBind(dlq, dlx, "");
      channel.queueDeclare(queue, true, false, false,
          Map.of("x-queue-type", "quorum", "x-dead-letter-exchange", dlx)); // no x-delivery-limit
      try {
        channel.basicPublish("", queue, null, "m".getBytes(StandardCharsets.UTF_8));
        int returns = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        // 25 returns are more than 4.0's default limit allows and prove 3.x has none; on 4.0 the
        // loop ends when the dead-letter queue has the message (no window to wait out)
        while (returns < 25 && channel.messageCount(dlq) == 0 && System.nanoTime() < deadline) {
          GetResponse delivery = channel.basicGet(queue, false);
          if (delivery == null) {
            Thread.sleep(20);
          } else {
            channel.basicReject(delivery.getEnvelope().getDeliveryTag(), true);
            returns++;
          }
        }
        if (major(connection) >= 4) {
          // the default x-delivery-limit 20: x-delivery-count may reach 20; the 21st return
          // (count 21, above the limit) dead-letters it — 22 deliveries in all
          assertThat(returns).as("returns until the default delivery-limit dead-lettered it").isEqualTo(21);
          assertThat(channel.messageCount(dlq)).isEqualTo(1);
        } else {
          assertThat(returns).as("3.x: no default delivery-limit").isEqualTo(25);
          assertThat(channel.messageCount(dlq)).isZero();
        }
      } finally {
        channel.queueDelete(queue);
        channel.queueDelete(dlq);
        channel.exchangeDelete(dlx);
      }
    }
  }

  private static String quorumQueue(Channel channel, String prefix) throws Exception {
    String queue = TestQueue.unique("versions-" + prefix);
    channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
    return queue;
  }

  private static int major(Connection connection) {
    String version = String.valueOf(connection.getServerProperties().get("version"));
    return Integer.parseInt(version.substring(0, version.indexOf('.')));
  }

  private static GetResponse get(Channel channel, String queue) throws Exception {
    long deadline = System.nanoTime() + GET_WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      GetResponse response = channel.basicGet(queue, false);
      if (response != null) {
        return response;
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no delivery from " + queue + " within " + GET_WAIT);
  }
}
