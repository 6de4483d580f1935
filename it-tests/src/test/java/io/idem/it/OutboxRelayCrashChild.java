package io.idem.it;

import com.rabbitmq.client.Connection;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.rabbitmq.RabbitOutboxPublisher;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.OutboxRelay;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * The crash test's victim: a relay whose publisher halts the JVM (no finally, no commit, no
 * shutdown hook) right after RabbitMQ confirmed the first message, before the relay marks it
 * sent. Arguments: the schema, the queue.
 */
public final class OutboxRelayCrashChild {
  /** The child's lease: its row comes back to another relay this long after the claim. */
  static final java.time.Duration LEASE = java.time.Duration.ofSeconds(3);

  private OutboxRelayCrashChild() {}

  public static void main(String[] args) throws Exception {
    String schema = args[0];
    String queue = args[1];
    HikariDataSource pool = PostgresFixture.shared().dataSource(schema, 2);
    Connection rabbit = RabbitFixture.shared().connectionFactory().newConnection("idem-outbox-crash-child");
    RabbitOutboxPublisher rabbitPublisher = RabbitOutboxPublisher.create(rabbit, "");
    OutboxPublisher haltAfterConfirm = message -> {
      rabbitPublisher.publish(message);
      System.out.println("CONFIRMED " + message.id() + " " + message.idempotencyKey());
      System.out.flush();
      Runtime.getRuntime().halt(137);
    };
    OutboxRelay relay = OutboxRelay.builder(new SqlSessionFactoryBuilder().build(new Configuration(
            new Environment("child", new JdbcTransactionFactory(), pool))), haltAfterConfirm)
        .batchSize(1).leaseDuration(LEASE).build();
    System.out.println("RELAYING " + queue);
    relay.relayOnce();
    System.out.println("NOT HALTED"); // reached only if the row was not published
  }
}
