package io.idem.jms;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import java.time.Duration;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.ibatis.session.SqlSession;

/**
 * The crash test's victim, run in a child JVM: consumes the queue with one worker and a
 * {@link CrashInjector} configured by {@code -Didem.crash.point} / {@code -Didem.crash.after},
 * which halts the JVM mid-flight. Arguments: JMS URL, queue, dead-letter queue, schema, consumer
 * group, effects run id. {@code -Didem.jms.maxBatchSize} (default 1, per-message mode) sets the
 * batch size.
 */
public final class JmsCrashVictim {
  private JmsCrashVictim() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String queue = args[1];
    String deadLetterQueue = args[2];
    String schema = args[3];
    String group = args[4];
    String run = args[5];
    HikariDataSource dataSource = PostgresFixture.shared().dataSource(schema, 4);
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(JmsTestDatabase.sessions(dataSource))
            .createTableIfMissing(true).build();
    Effects effects = new Effects(dataSource, run);
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((message, session) -> effects.record(session, message.header("idempotency-key")))
        .retryPolicy(JmsTestDatabase.attempts(5))
        .listener(CrashInjector.fromSystemProperties())
        .build();
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(new ActiveMQConnectionFactory(url), queue, deadLetterQueue)
            .receiveTimeout(Duration.ofMillis(200))
            .maxBatchSize(Integer.getInteger("idem.jms.maxBatchSize", 1))
            .build(),
        pipeline);
    consumer.start();
    System.out.println("VICTIM-STARTED");
    Thread.sleep(60_000); // the injector halts the JVM long before this
    System.out.println("VICTIM-DID-NOT-CRASH");
    consumer.close();
    System.exit(3);
  }
}
