package io.idem.rabbitmq;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.MessageHandler;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import java.sql.PreparedStatement;
import org.apache.ibatis.session.SqlSession;

/**
 * A user's consumer under the crash matrix ({@link RabbitCrashMatrixForAUsersHandlerIT}), run in
 * the child JVM: the user's own handler (one row per order in the user's table {@value #TABLE},
 * written on Idem's session) and retry policy, with the matrix's crash listener added — what a
 * user writes to have the crash guarantees checked for their own handler and schema. Property
 * {@code uri}.
 */
public final class RabbitUserHandlerCrashMatrixFactory implements CrashMatrixConsumerFactory {
  static final String TABLE = "crash_orders";

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MessageHandler<SqlSession> placeOrder = (message, session) -> {
      try (PreparedStatement insert = session.getConnection().prepareStatement(
          "INSERT INTO " + TABLE + " (order_key, body) VALUES (?, ?)")) {
        insert.setString(1, message.header("idempotency-key"));
        insert.setBytes(2, message.payload());
        insert.executeUpdate();
      }
    };
    IdempotentConsumer<SqlSession> pipeline =
        IdempotentConsumer.builder(MyBatisProcessedEventStore.builder(context.sessions()).build())
            .consumerGroup(context.consumerGroup())
            .handler(placeOrder)
            .retryPolicy(context.retryPolicy())
            .listener(context.crashListener())
            .build();
    RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(
        RabbitConsumerConfig.builder(context.destination())
            .uri(context.property("uri"))
            .queueType(RabbitQueueType.CLASSIC)
            .connectionName("idem-test-crash-user-" + context.destination())
            .build(),
        pipeline);
    consumer.start();
    return consumer;
  }
}
