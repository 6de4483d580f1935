package io.idem.jms;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotentConsumer;
import io.idem.NonRetryableException;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashInjector;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;

/**
 * The crash test's victim, run in a child JVM: consumes the queue with one worker and a
 * {@link CrashInjector} configured by {@code -Didem.crash.point} / {@code -Didem.crash.after},
 * which halts the JVM mid-flight. Arguments: JMS URL, queue, dead-letter queue, schema, consumer
 * group, effects run id. {@code -Didem.jms.maxBatchSize} (default 1, per-message mode) sets the
 * batch size, {@code -Didem.jms.sessionMode} (default TRANSACTED) the session mode. A message with
 * the header {@code x-fail} fails its handler with a {@link NonRetryableException}. Broker calls
 * pass the crash points through {@link JmsCrashingConnections}: DURING_ACK after {@code commit()},
 * DEAD_LETTER_COPY_STORED after a dead-letter {@code send} in a {@code CLIENT_ACKNOWLEDGE} session.
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
    CrashInjector crashes = CrashInjector.fromSystemProperties();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((message, session) -> {
          if (message.header("x-fail") != null) {
            throw new NonRetryableException("poison " + message.header("idempotency-key"));
          }
          effects.record(session, message.header("idempotency-key"));
        })
        .retryPolicy(JmsTestDatabase.attempts(5))
        .listener(crashes)
        .build();
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(
        JmsConsumerConfig.builder(new JmsCrashingConnections(url, deadLetterQueue, crashes), queue, deadLetterQueue)
            .receiveTimeout(Duration.ofMillis(200))
            .maxBatchSize(Integer.getInteger("idem.jms.maxBatchSize", 1))
            .sessionMode(JmsSessionMode.valueOf(System.getProperty("idem.jms.sessionMode", "TRANSACTED")))
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
