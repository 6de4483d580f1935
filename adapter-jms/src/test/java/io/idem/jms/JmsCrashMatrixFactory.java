package io.idem.jms;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import io.idem.testkit.CrashPoint;
import java.time.Duration;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * The adapter kit's crash matrix consumer ({@link JmsCompatibilityKit#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store and a {@link JmsIdempotentConsumer}
 * configured as {@link JmsHarness#config()} configures the kit's own (two worker sessions).
 * Properties {@code url} (the Artemis core URL), {@code max-batch-size} (a number, or {@code
 * default}: the builder's default, batch mode), optional {@code user} and {@code password}. Its
 * connections ({@link JmsCrashingConnections}) pass DURING_ACK after {@code Session.commit()} and
 * DEAD_LETTER_COPY_STORED after the dead-letter {@code send} of a {@code CLIENT_ACKNOWLEDGE}
 * session. Every point runs in the default transacted session, except DEAD_LETTER_COPY_STORED:
 * there the copy and the removal of the original are one commit in a transacted session, so that
 * point runs (in every life) in {@code CLIENT_ACKNOWLEDGE}, where they are two operations.
 */
public final class JmsCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    String queue = context.destination();
    ActiveMQConnectionFactory connections =
        new JmsCrashingConnections(context.property("url"), queue + ".dlq", context.crashInjector());
    String user = context.properties().get("user");
    if (user != null) {
      connections.setUser(user);
      connections.setPassword(context.properties().getOrDefault("password", ""));
    }
    boolean copyThenRemoval = context.point().equals(CrashPoint.DEAD_LETTER_COPY_STORED.name());
    JmsConsumerConfig.Builder config = JmsConsumerConfig.builder(connections, queue, queue + ".dlq")
        .sessionMode(copyThenRemoval ? JmsSessionMode.CLIENT_ACKNOWLEDGE : JmsSessionMode.TRANSACTED)
        .receiveTimeout(Duration.ofMillis(200))
        .shutdownTimeout(Duration.ofSeconds(20))
        .reconnectBackoff(Duration.ofMillis(200))
        .concurrency(2);
    String maxBatchSize = context.property("max-batch-size");
    if (!maxBatchSize.equals("default")) {
      config.maxBatchSize(Integer.parseInt(maxBatchSize));
    }
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(config.build(), context.kitPipeline(store));
    consumer.start();
    return consumer;
  }
}
