package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import io.idem.BrokerConsumer;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.jms.JmsOutboxPublisher;
import io.idem.kafka.KafkaOutboxPublisher;
import io.idem.rabbitmq.RabbitOutboxPublisher;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.sqs.SqsOutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The relay through each broker's publisher to that broker's Idem consumer: rows enqueued on the
 * real PostgreSQL, every row published twice (as after a relay crash between the confirm and the
 * sent mark), marked sent, and the downstream consumer applies each once.
 */
class OutboxRelayAllBrokersIT {
  private static final int ROWS = 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(90);
  private @Nullable DemoBroker broker;
  private @Nullable String destination;
  private @Nullable ItDatabase db;
  private @Nullable BrokerConsumer consumer;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    if (consumer != null) {
      consumer.close();
    }
    for (AutoCloseable c : closeables) {
      c.close();
    }
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      broker.deleteDestination(destination);
      broker.close();
    }
  }

  private OutboxPublisher publisher(String name) throws Exception {
    return switch (name) {
      case "kafka" -> KafkaOutboxPublisher.create(Map.of("bootstrap.servers", KafkaFixture.shared().bootstrapServers()));
      case "rabbitmq" -> {
        Connection c = RabbitFixture.shared().connectionFactory().newConnection("idem-it-outbox-relay");
        closeables.add(c);
        yield RabbitOutboxPublisher.create(c, "");
      }
      case "sqs" -> {
        var client = SqsFixture.shared().newClient();
        closeables.add(client);
        yield SqsOutboxPublisher.create(client);
      }
      case "jms" -> JmsOutboxPublisher.create(ArtemisFixture.shared().connectionFactory());
      default -> throw new IllegalArgumentException(name);
    };
  }

  /** The row's destination in the publisher's terms: SQS wants the queue URL. */
  private static String target(String name, String destination) {
    if (!name.equals("sqs")) {
      return destination;
    }
    try (var client = SqsFixture.shared().newClient()) {
      return client.getQueueUrl(b -> b.queueName(destination)).queueUrl();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void everyRowPublishedTwiceIsAppliedOnceDownstream(String name) throws Exception {
    relayTwice(name, false);
  }

  /** The same with each batch published twice through the publisher's {@code publishAll}. */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void everyBatchPublishedTwiceIsAppliedOnceDownstream(String name) throws Exception {
    relayTwice(name, true);
  }

  private void relayTwice(String name, boolean batches) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    broker = DemoBrokers.create(name);
    System.out.println("[it] " + broker.start());
    destination = "idem-it-outbox-" + name + "-" + run;
    broker.createDestination(destination);
    db = ItDatabase.direct("it_outbox_" + name);
    Outbox.createTableIfMissing(db.direct, Outbox.DEFAULT_TABLE);
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("it", new JdbcTransactionFactory(), db.consumerPool)));
    String target = target(name, destination);
    try (SqlSession session = sessions.openSession(false)) {
      for (int i = 0; i < ROWS; i++) {
        Outbox.ofDefaults().enqueue(session, new OutboxEntry(run + "-receipt-" + i, target, "order-" + (i % 4),
            ("{\"receipt\":" + i + "}").getBytes(StandardCharsets.UTF_8), Map.of()));
      }
      session.commit();
    }

    OutboxPublisher real = publisher(name);
    closeables.add(real);
    List<OutboxMessage> published = new ArrayList<>();
    OutboxPublisher oneByOne = message -> {
      real.publish(message);
      real.publish(message); // the copy a relay killed before its sent mark leaves behind
      published.add(message);
    };
    OutboxPublisher batching = new OutboxPublisher() {
      @Override
      public void publish(OutboxMessage message) throws Exception {
        oneByOne.publish(message);
      }

      @Override
      public List<io.idem.spi.OutboxPublishResult> publishAll(List<OutboxMessage> messages) throws Exception {
        real.publishAll(messages); // the copies a relay killed before its sent mark leaves behind
        List<io.idem.spi.OutboxPublishResult> results = real.publishAll(messages);
        for (int i = 0; i < messages.size(); i++) {
          assertThat(results.get(i).status()).as("row %s", messages.get(i).id())
              .isEqualTo(io.idem.spi.OutboxPublishResult.Status.SENT);
          published.add(messages.get(i));
        }
        return results;
      }
    };
    OutboxRelay relay = OutboxRelay.builder(sessions, batches ? batching : oneByOne).batchSize(8).build();
    for (int round = 0; round < 4 * ROWS && relay.relayOnce() > 0; round++) {
      // one row per ordering key per batch: a few rounds
    }
    assertThat(published).hasSize(ROWS);
    assertThat(relay.stats().backlog()).isZero();

    String group = "idem-it-outbox-" + run;
    IdempotencyKeyExtractor keys = IdempotencyKeyExtractor.defaults();
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> downstream = IdempotentConsumer.builder(db.store)
        .consumerGroup(group).keyExtractor(keys).handler(ItDatabase.recording(keys)).listener(outcomes).build();
    consumer = broker.consumer(destination, downstream);
    consumer.start();
    ItDatabase database = db;
    DemoBroker b = broker;
    await("every receipt applied").atMost(TIMEOUT).pollInterval(Duration.ofMillis(100))
        .until(() -> outcomes.count(ProcessingOutcome.DUPLICATE) == ROWS && b.pending(destination, group) == 0);
    consumer.close();
    consumer = null;
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).as("both copies arrived, one applied").isEqualTo(ROWS);
    assertThat(db.totalEffects()).isEqualTo(ROWS);
    assertThat(db.distinctKeys()).isEqualTo(ROWS);
    assertThat(db.doubled()).isZero();
  }
}
