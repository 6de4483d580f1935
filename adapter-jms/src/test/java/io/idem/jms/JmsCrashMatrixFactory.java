package io.idem.jms;

import io.idem.BrokerConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import java.time.Duration;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * The adapter kit's crash matrix consumer ({@link JmsAdapterCompatibilityIT#crashConsumerFactory}),
 * run in the child JVM: the kit's pipeline on the MyBatis store and a {@link JmsIdempotentConsumer}
 * configured as {@link JmsHarness#config()} configures the kit's own (two worker sessions).
 * Properties {@code url} (the Artemis core URL), optional {@code user} and {@code password}.
 */
public final class JmsCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    ActiveMQConnectionFactory connections = new ActiveMQConnectionFactory(context.property("url"));
    String user = context.properties().get("user");
    if (user != null) {
      connections.setUser(user);
      connections.setPassword(context.properties().getOrDefault("password", ""));
    }
    String queue = context.destination();
    JmsConsumerConfig config = JmsConsumerConfig.builder(connections, queue, queue + ".dlq")
        .receiveTimeout(Duration.ofMillis(200))
        .shutdownTimeout(Duration.ofSeconds(20))
        .reconnectBackoff(Duration.ofMillis(200))
        .concurrency(2)
        .build();
    JmsIdempotentConsumer consumer = JmsIdempotentConsumer.create(config, context.kitPipeline(store));
    consumer.start();
    return consumer;
  }
}
