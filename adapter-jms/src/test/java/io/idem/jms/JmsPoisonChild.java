package io.idem.jms;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.jms.JmsTestDatabase.Effects;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * {@link JmsProcessKillingMessageIT}'s consumer, run in a child JVM: consumes queue {@code
 * args[1]} of the Artemis broker at {@code args[0]} (dead-letter queue {@code args[2]}) into schema
 * {@code args[3]} for consumer group {@code args[4]}, effects under run id {@code args[5]}, with
 * maxAttempts {@value #MAX_ATTEMPTS}, one worker, session mode {@code args[8]} and batch size
 * {@code args[9]}, until file {@code args[6]} exists. The handler of key {@code args[7]} kills
 * the process: {@code -Didem.poison=HALT} (the default) calls {@code Runtime.halt(1)} (like kill
 * -9: no finally, no rollback, no hook); {@code OOM} throws an OutOfMemoryError, which ends the
 * consumer's worker while the JVM lives on — this child then closes that consumer and starts a new
 * one, as an application watching {@code isRunning()} would. The handler of key {@code
 * -Didem.flaky} (if set) fails its first run in each JVM. Prints {@code READY}, {@code
 * POISON-RUN}, {@code FLAKY-RUN}, {@code RESTART} and {@code OUTCOME <key> <outcome> attempt <n>}.
 */
public final class JmsPoisonChild {
  static final int MAX_ATTEMPTS = 3;

  private JmsPoisonChild() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String queue = args[1];
    String deadLetterQueue = args[2];
    Path stopFile = Path.of(args[6]);
    String poison = args[7];
    boolean halt = !"OOM".equals(System.getProperty("idem.poison", "HALT"));
    String flaky = System.getProperty("idem.flaky", "");
    AtomicBoolean flakyFailed = new AtomicBoolean();
    HikariDataSource dataSource = PostgresFixture.shared().dataSource(args[3], 4);
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(JmsTestDatabase.sessions(dataSource)).createTableIfMissing(true).build();
    Effects effects = new Effects(dataSource, args[5]);
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(args[4])
        .handler((message, session) -> {
          if (poison.equals(message.header("idempotency-key"))) {
            System.out.println("POISON-RUN");
            System.out.flush();
            if (halt) {
              Runtime.getRuntime().halt(1);
            }
            throw new OutOfMemoryError("simulated: the handler of " + poison + " ran out of memory");
          }
          if (flaky.equals(message.header("idempotency-key"))) {
            System.out.println("FLAKY-RUN");
            if (flakyFailed.compareAndSet(false, true)) {
              throw new IllegalStateException("simulated: the first run of " + flaky + " fails");
            }
          }
          effects.record(session, message.header("idempotency-key"));
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(MAX_ATTEMPTS)
            .initialBackoff(Duration.ofMillis(100)).maxBackoff(Duration.ofSeconds(1)).build())
        .listener(new IdempotencyListener() {
          @Override
          public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
              ProcessingOutcome outcome, Duration elapsed) {
            System.out.println("OUTCOME " + (key == null ? "-" : key.value()) + " " + outcome
                + " attempt " + message.deliveryAttempt());
          }
        })
        .build();
    JmsConsumerConfig config = JmsConsumerConfig.builder(new ActiveMQConnectionFactory(url), queue, deadLetterQueue)
        .concurrency(1)
        .sessionMode(JmsSessionMode.valueOf(args[8]))
        .maxBatchSize(Integer.parseInt(args[9]))
        .receiveTimeout(Duration.ofMillis(200))
        .reconnectBackoff(Duration.ofMillis(200))
        .build();
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(config, pipeline);
    try {
      consumer.start();
      System.out.println("READY");
      while (!Files.exists(stopFile)) {
        if (!consumer.isRunning()) { // an Error ended its worker: replace it, the JVM lives on
          consumer.close();
          System.out.println("RESTART");
          consumer = JmsIdempotentConsumer.create(config, pipeline);
          consumer.start();
        }
        Thread.sleep(50);
      }
    } finally {
      consumer.close();
      dataSource.close();
    }
    System.out.println("CLOSED");
  }
}
