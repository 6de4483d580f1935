package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.RabbitFixture;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.rabbitmq.RabbitOutboxPublisher;
import io.idem.rabbitmq.RabbitQueueType;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * THE outbox test: the relay is killed (Runtime.halt in a child JVM) after RabbitMQ confirmed a
 * row and before the relay marked it sent. The row is still unsent, so the next relay publishes
 * it again: the queue holds two copies with one key, and the downstream Idem consumer applies
 * it once.
 */
class OutboxRelayCrashIT {

  @Test
  void aRelayKilledAfterTheConfirmPublishesTwiceAndTheNextConsumerAppliesOnce() throws Exception {
    String queue = "idem-test-outbox-crash-" + UUID.randomUUID().toString().substring(0, 8);
    try (ItDatabase db = ItDatabase.direct("outbox_crash");
        Connection rabbit = RabbitFixture.shared().connectionFactory().newConnection("idem-outbox-crash-it")) {
      RabbitConsumerConfig config = RabbitConsumerConfig.builder(queue).uri(RabbitFixture.shared().uri())
          .queueType(RabbitQueueType.QUORUM).deliveryLimit(20).build();
      try (Channel ch = rabbit.createChannel()) {
        ch.exchangeDeclare(queue + ".dlx", BuiltinExchangeType.FANOUT, true);
        ch.queueDeclare(queue + ".dlq", true, false, false, Map.of("x-queue-type", "quorum"));
        ch.queueBind(queue + ".dlq", queue + ".dlx", "");
        ch.queueDeclare(queue, true, false, false, config.queueArguments());
      }
      try {
        Outbox.createTableIfMissing(db.direct, Outbox.DEFAULT_TABLE);
        SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(
            new Configuration(new Environment("it", new JdbcTransactionFactory(), db.consumerPool)));
        try (SqlSession session = sessions.openSession(false)) {
          Outbox.ofDefaults().enqueue(session, new IdempotencyKey("billing", "order-7:receipt",
              io.idem.KeySource.HEADER), queue, "receipt 7".getBytes(StandardCharsets.UTF_8), Map.of());
          session.commit();
        }

        try (ChildJvm child = ChildJvm.start("outbox-relay", OutboxRelayCrashChild.class, List.of("-Xmx256m"),
            List.of(db.schema, queue), Map.of(), line -> {})) {
          assertThat(child.waitFor(Duration.ofSeconds(120))).isEqualTo(137);
          assertThat(child.printed("CONFIRMED")).as("the child published before it died: " + child.lines()).isTrue();
        }
        assertThat(count(db, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL")).as("not marked sent").isEqualTo(1);
        assertThat(ready(rabbit, queue)).as("the first copy").isEqualTo(1);

        OutboxRelay relay = OutboxRelay.builder(sessions, RabbitOutboxPublisher.create(rabbit, "")).build();
        // The dead child's lease holds the row until it ends (a live relay's row is never taken),
        // then it is claimable again.
        await().atMost(OutboxRelayCrashChild.LEASE.multipliedBy(10)).pollInterval(Duration.ofMillis(100))
            .until(() -> relay.relayOnce() == 1);
        assertThat(count(db, "SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL")).isZero();
        assertThat(ready(rabbit, queue)).as("published twice").isEqualTo(2);

        List<ProcessingOutcome> outcomes = new CopyOnWriteArrayList<>();
        IdempotentConsumer<SqlSession> downstream = IdempotentConsumer.builder(db.store)
            .consumerGroup("receipts")
            .listener(new IdempotencyListener() {
              @Override
              public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
                  ProcessingOutcome outcome, Duration elapsed) {
                outcomes.add(outcome);
              }
            })
            .handler((IdempotencyKey key, InboundMessage message, SqlSession session) -> {
              try (PreparedStatement ps = session.getConnection().prepareStatement(
                  "INSERT INTO it_effects (idem_key, attempt, payload_length) VALUES (?, ?, ?)")) {
                ps.setString(1, key.value());
                ps.setInt(2, message.deliveryAttempt());
                ps.setInt(3, message.payload().length);
                ps.executeUpdate();
              }
            })
            .build();
        try (RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(config, downstream)) {
          consumer.start();
          await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
              .until(() -> outcomes.size() == 2);
        }
        assertThat(outcomes).containsExactlyInAnyOrder(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
        assertThat(db.effects("order-7:receipt")).isEqualTo(1);
        assertThat(db.doubled()).isZero();
      } finally {
        try (Channel ch = rabbit.createChannel()) {
          ch.queueDelete(queue);
          ch.queueDelete(queue + ".dlq");
          ch.exchangeDelete(queue + ".dlx");
        }
      }
    }
  }

  private static long ready(Connection rabbit, String queue) throws Exception {
    try (Channel ch = rabbit.createChannel()) {
      return ch.queueDeclarePassive(queue).getMessageCount();
    }
  }

  private static long count(ItDatabase db, String sql) throws Exception {
    try (java.sql.Connection c = db.direct.getConnection(); java.sql.Statement s = c.createStatement();
        java.sql.ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
