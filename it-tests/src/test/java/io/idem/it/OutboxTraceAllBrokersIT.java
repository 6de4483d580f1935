package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.TraceContext;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Outbound;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
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
 * One trace end to end through a real broker and the real PostgreSQL: messages carrying each its
 * own W3C {@code traceparent} are published to an inbound destination; an Idem consumer handles
 * each and enqueues an outbox row in its transaction; the relay thread publishes the rows to a
 * second destination through the broker's {@link OutboxPublisher}; a downstream Idem consumer
 * handling a published message sees, through {@link TraceContext}, the trace id of the inbound
 * message that caused it (inbound → handler → outbox → published → downstream).
 */
class OutboxTraceAllBrokersIT {
  private static final int MESSAGES = 6;
  private static final Duration TIMEOUT = Duration.ofSeconds(90);
  private @Nullable DemoBroker broker;
  private final List<String> destinations = new ArrayList<>();
  private @Nullable ItDatabase db;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      for (String d : destinations) {
        broker.deleteDestination(d);
      }
      broker.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void theInboundTraceReachesTheDownstreamConsumerThroughTheOutbox(String name) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    DemoBroker b = DemoBrokers.create(name);
    broker = b;
    System.out.println("[it] " + b.start());
    String inbound = "idem-it-trace-in-" + name + "-" + run;
    String outbound = "idem-it-trace-out-" + name + "-" + run;
    for (String d : List.of(inbound, outbound)) {
      b.createDestination(d);
      destinations.add(d);
    }
    ItDatabase database = ItDatabase.direct("it_outbox_trace_" + name);
    db = database;
    Outbox.createTableIfMissing(database.direct, Outbox.DEFAULT_TABLE);
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("it", new JdbcTransactionFactory(), database.consumerPool)));

    // Upstream: each handled message enqueues one row (ordered by a key, so the relay keeps order).
    String rowDestination = b.outboxDestination(outbound);
    Map<String, String> upstreamSaw = new ConcurrentHashMap<>();
    OutcomeRecorder upstreamOutcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> upstream = IdempotentConsumer.builder(database.store)
        .consumerGroup("idem-it-trace-up-" + run).listener(upstreamOutcomes)
        .handler((IdempotencyKey key, InboundMessage message, SqlSession session) -> {
          String receipt = "receipt-" + key.value();
          upstreamSaw.put(receipt, String.valueOf(TraceContext.traceId(TraceContext.forOutbox(receipt, rowDestination))));
          Outbox.ofDefaults().enqueue(session, new OutboxEntry(receipt, rowDestination, "order-" + run,
              message.payload(), Map.of()));
        })
        .build();
    BrokerConsumer upstreamConsumer = b.consumer(inbound, upstream);
    closeables.add(upstreamConsumer);

    // Downstream: what the handler of a published message sees as its trace.
    Map<String, String> downstreamSaw = new ConcurrentHashMap<>();
    OutcomeRecorder downstreamOutcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> downstream = IdempotentConsumer.builder(database.store)
        .consumerGroup("idem-it-trace-down-" + run).listener(downstreamOutcomes)
        .handler((IdempotencyKey key, InboundMessage message, SqlSession session) -> downstreamSaw.put(key.value(),
            String.valueOf(TraceContext.traceId(TraceContext.forOutbox(key.value(), "next")))))
        .build();
    BrokerConsumer downstreamConsumer = b.consumer(outbound, downstream);
    closeables.add(downstreamConsumer);

    OutboxPublisher publisher = b.outboxPublisher();
    closeables.add(publisher);
    OutboxRelay relay = OutboxRelay.builder(sessions, publisher).name("idem-it-trace-relay-" + name)
        .pollInterval(Duration.ofMillis(50)).build();
    closeables.add(relay);

    Map<String, String> traceIdOf = new ConcurrentHashMap<>();
    List<Outbound> messages = new ArrayList<>();
    for (int i = 0; i < MESSAGES; i++) {
      String key = run + "-paid-" + i;
      String traceId = UUID.randomUUID().toString().replace("-", "").toLowerCase(Locale.ROOT);
      String spanId = traceId.substring(0, 16);
      traceIdOf.put("receipt-" + key, traceId);
      messages.add(Outbound.of(Map.of(Outbound.KEY_HEADER, key, TraceContext.TRACEPARENT,
          "00-" + traceId + "-" + spanId + "-01"), ("{\"paid\":" + i + "}").getBytes(StandardCharsets.UTF_8)));
    }
    b.publish(inbound, messages);
    upstreamConsumer.start();
    downstreamConsumer.start();
    relay.start();

    await("every published receipt handled downstream").atMost(TIMEOUT).pollInterval(Duration.ofMillis(100))
        .until(() -> downstreamOutcomes.count(ProcessingOutcome.PROCESSED) == MESSAGES);
    assertThat(upstreamOutcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(MESSAGES);
    assertThat(upstreamSaw).as("the upstream handler's trace").isEqualTo(traceIdOf);
    assertThat(downstreamSaw).as("the downstream handler's trace, per receipt").isEqualTo(traceIdOf);
    assertThat(relay.stats().backlog()).isZero();
    assertThat(database.count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NOT NULL AND traceparent LIKE ?",
        "00-%-01")).as("rows sent, each with its traceparent").isEqualTo(MESSAGES);
  }
}
