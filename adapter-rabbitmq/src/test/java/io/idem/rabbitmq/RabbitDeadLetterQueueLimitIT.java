package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import io.idem.IdempotentConsumer;
import io.idem.RetryPolicy;
import java.util.Map;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code declareTopology(true)} and a quorum dead-letter queue's delivery limit: on RabbitMQ 4+
 * (a default limit of 20) the {@code .dlq} is declared with {@code x-delivery-limit=-1}, so that
 * returning its dead letters (an operator reading them) can never drop one; on 3.x nothing is added
 * (no default limit, and -1 would mean 0). A {@code .dlq} declared earlier without it is kept and
 * the consumer starts. Checked by declaration, which RabbitMQ compares with the queue's arguments;
 * the assertions follow the server's version (the suite runs on 3.10; {@code IDEM_RABBITMQ_URI}
 * points it at a 4.x server).
 */
class RabbitDeadLetterQueueLimitIT {
  private static TestDatabase db;

  @BeforeAll
  static void openDatabase() {
    db = TestDatabase.fresh("rabbit_dlq_limit");
  }

  @AfterAll
  static void closeDatabase() {
    db.close();
  }

  private static IdempotentConsumer<SqlSession> pipeline() {
    return IdempotentConsumer.builder(db.store).consumerGroup("dlq-limit").retryPolicy(RetryPolicy.ofDefaults())
        .handler((message, session) -> { }).build();
  }

  private static boolean declares(Channel ch, String queue, Map<String, Object> args) {
    try (Channel probe = ch.getConnection().createChannel()) {
      probe.queueDeclare(queue, true, false, false, args);
      return true;
    } catch (Exception refused) {
      return false;
    }
  }

  @Test
  void theTopologyDeclaresAQuorumDeadLetterQueueWithoutALimitOnRabbitMq4AndKeepsAnOlderOne() throws Exception {
    try (TestQueue fresh = TestQueue.undeclared("dlq-fresh", RabbitQueueType.QUORUM);
        TestQueue older = TestQueue.undeclared("dlq-older", RabbitQueueType.QUORUM)) {
      String version = fresh.channel().getConnection().getServerProperties().get("version").toString();
      boolean four = Topology.majorVersion(version) >= 4;
      RabbitIdempotentConsumer consumer =
          RabbitIdempotentConsumer.create(fresh.configBuilder().declareTopology(true).build(), pipeline());
      consumer.start();
      consumer.close();
      Map<String, Object> unlimited = Map.of("x-queue-type", "quorum", "x-delivery-limit", -1);
      Map<String, Object> plain = Map.of("x-queue-type", "quorum");
      assertThat(declares(fresh.channel(), fresh.name + ".dlq", four ? unlimited : plain))
          .as("RabbitMQ " + version + ": the .dlq's arguments").isTrue();

      older.channel().queueDeclare(older.name + ".dlq", true, false, false, plain);
      RabbitIdempotentConsumer again =
          RabbitIdempotentConsumer.create(older.configBuilder().declareTopology(true).build(), pipeline());
      again.start();
      assertThat(again.isRunning()).as("an older .dlq is kept, the consumer starts").isTrue();
      again.close();
      assertThat(declares(older.channel(), older.name + ".dlq", plain)).isTrue();
    }
  }
}
