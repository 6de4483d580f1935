package io.idem.it;

import static io.idem.testkit.SampleEnvelopes.CLOUDEVENTS_BATCH_JSON;
import static io.idem.testkit.SampleEnvelopes.CLOUDEVENTS_JSON;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.EnvelopeFormat;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.KeyExtraction;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.demo.DemoBroker;
import io.idem.demo.Outbound;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import io.idem.testkit.SampleEnvelopes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 17 on each broker's real path, with real PostgreSQL: envelopes a broker or platform puts
 * around the producer's event arrive the way they do in production — SNS notifications (non-raw
 * delivery) and CloudEvents by shape through SQS (ElasticMQ), structured CloudEvents with the
 * transport's content type through Kafka (header {@code content-type}), RabbitMQ (the AMQP
 * {@code content-type} property) and JMS (property {@code content_type}), EventBridge events
 * through all four. Each is published, then published again as its producer (or the platform)
 * retries it — new SNS MessageId/Timestamp/Signature, new EventBridge id/time, the same content:
 * applied once, the retry a DUPLICATE and never a CONFLICT, the handler given the event inside.
 * Envelopes that cannot be opened are dead-lettered with INVALID_KEY and the reason.
 */
class EnvelopesIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(90);

  private BrokerRun run;

  @AfterEach
  void tearDown() {
    if (run != null) {
      run.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void eachEnvelopeIsOpenedOnceAndItsRetryIsADuplicate(String name) throws Exception {
    String id = UUID.randomUUID().toString().substring(0, 8);
    run = BrokerRun.start(name, "idem-it-envelopes", id);
    DemoBroker broker = run.broker;
    String destination = run.destination;
    ItDatabase db = run.db;
    String group = "idem-it-envelopes-" + id;
    boolean sqs = name.equals("sqs");

    // the defaults (SNS, CloudEvents structured) plus EventBridge; a payload field as last resort
    IdempotencyKeyExtractor keys =
        IdempotencyKeyExtractor.defaults().orElse(IdempotencyKeyExtractor.jsonPointer("/orderId"));
    Map<String, String> handled = new ConcurrentHashMap<>();
    MessageHandler<SqlSession> recording = ItDatabase.recording(keys);
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .envelope(EnvelopeFormat.eventBridge())
        .keyExtractor(keys)
        .handler((message, session) -> {
          recording.handle(message, session);
          KeyExtraction key = keys.extract(message);
          handled.put(((KeyExtraction.Found) key).value(), new String(message.payload(), StandardCharsets.UTF_8));
        })
        .listener(outcomes)
        .build();
    BrokerConsumer consumer = run.consume(pipeline);

    // key → (the delivery, its retry, what the handler must see)
    Map<String, Retried> good = new LinkedHashMap<>();
    String ceData = "{\"orderId\":\"" + id + "-in-data\",\"amount\":12.50}";
    String ceKey = "/orders " + id + "-ce";
    byte[] ce = SampleEnvelopes.cloudEvent("/orders", id + "-ce", ceData);
    good.put(ceKey, sqs
        // SQS carries no content type: recognized by the shape
        ? new Retried(new Outbound(Map.of(), ce), new Outbound(Map.of(), ce), ceData)
        : new Retried(Outbound.of(Map.of("content-type", CLOUDEVENTS_JSON), ce),
            Outbound.of(Map.of("content-type", CLOUDEVENTS_JSON + "; charset=UTF-8"), ce), ceData));
    String ebDetail = "{\"orderId\":\"" + id + "-eb\",\"amount\":7}";
    good.put(id + "-eb", new Retried(
        new Outbound(Map.of(), SampleEnvelopes.eventBridge("OrderPaid", ebDetail, 1)),
        new Outbound(Map.of(), SampleEnvelopes.eventBridge("OrderPaid", ebDetail, 2)), ebDetail));
    if (sqs) {
      String order = "{\"orderId\":42,\"note\":\"\\\"quoted\\\" and ü\"}";
      Map<String, String> attributes = Map.of("idempotency-key", id + "-sns");
      good.put(id + "-sns", new Retried(
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(order, attributes, "Order paid", 1)),
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(order, attributes, "Order paid", 2)), order));
      String bare = "{\"orderId\":\"" + id + "-sns-bare\"}";
      good.put(id + "-sns-bare", new Retried(
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(bare, Map.of(), null, 1)),
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(bare, Map.of(), null, 2)), bare));
      String inner = new String(ce, StandardCharsets.UTF_8).replace(id + "-ce", id + "-sns-ce");
      good.put("/orders " + id + "-sns-ce", new Retried(
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(inner, Map.of(), null, 1)),
          new Outbound(Map.of(), SampleEnvelopes.snsNotification(inner, Map.of(), null, 2)), ceData));
    }
    broker.publish(destination, good.values().stream().map(Retried::first).toList());
    await("first deliveries applied").atMost(TIMEOUT).until(() -> db.distinctKeys() == good.size());
    broker.publish(destination, good.values().stream().map(Retried::retry).toList());

    // bad: each dead-lettered with INVALID_KEY and a detail containing the given text
    List<Bad> bad = new ArrayList<>();
    String objectMessage = new String(SampleEnvelopes.snsNotification("x", Map.of("idempotency-key", id + "-bad"),
        null, 1), StandardCharsets.UTF_8).replace("\"Message\":\"x\",", "\"Message\":{\"a\":1},");
    bad.add(new Bad(new Outbound(Map.of(), objectMessage.getBytes(StandardCharsets.UTF_8)), "'Message' is a JSON object"));
    if (!sqs) {
      bad.add(new Bad(Outbound.of(Map.of("content-type", CLOUDEVENTS_JSON),
          ("{\"specversion\":\"1.0\",\"id\":\"" + id + "-broken\"").getBytes(StandardCharsets.UTF_8)), "invalid JSON"));
      bad.add(new Bad(Outbound.of(Map.of("content-type", CLOUDEVENTS_BATCH_JSON),
          SampleEnvelopes.cloudEventBatch("/orders", id + "-b1", id + "-b2", ceData)), "batch mode"));
    }
    broker.publish(destination, bad.stream().map(Bad::message).toList());

    await("every retry settled as a duplicate").atMost(TIMEOUT)
        .until(() -> good.keySet().stream().allMatch(k -> outcomes.count(k, ProcessingOutcome.DUPLICATE) >= 1));
    await("every bad envelope dead-lettered, nothing left").atMost(TIMEOUT)
        .until(() -> broker.deadLettered(destination) >= bad.size() && broker.pending(destination, group) == 0);

    for (Map.Entry<String, Retried> each : good.entrySet()) {
      String key = each.getKey();
      assertThat(db.effects(key)).as("effects of " + key).isEqualTo(1);
      assertThat(outcomes.count(key, ProcessingOutcome.PROCESSED)).as("PROCESSED " + key).isEqualTo(1);
      assertThat(outcomes.count(key, ProcessingOutcome.DUPLICATE)).as("DUPLICATE " + key).isEqualTo(1);
      assertThat(outcomes.count(key, ProcessingOutcome.CONFLICT)).as("CONFLICT " + key).isZero();
      assertThat(handled.get(key)).as("what the handler saw for " + key).isEqualTo(each.getValue().handlerSees());
    }
    assertThat(db.totalEffects()).isEqualTo(good.size());
    assertThat(db.processedKeys(group)).containsExactlyInAnyOrderElementsOf(good.keySet());

    List<DeadLetteredMessage> dead = broker.readDeadLetters(destination);
    assertThat(dead).as("dead letters").hasSize(bad.size());
    for (Bad b : bad) {
      List<DeadLetteredMessage> copies =
          dead.stream().filter(d -> Arrays.equals(d.payload(), b.message().payload())).toList();
      assertThat(copies).as("dead-letter copy (the delivery as it arrived) of " + b.detail()).hasSize(1);
      assertThat(copies.get(0).cause()).isEqualTo(DeadLetterCause.INVALID_KEY.name());
      assertThat(copies.get(0).detail()).contains(b.detail());
    }
    assertThat(consumer.isRunning()).isTrue();
    System.out.printf("[it] %s envelopes: %d shapes applied once with their retries as duplicates, %d dead-lettered%n",
        name, good.size(), dead.size());
  }

  private record Retried(Outbound first, Outbound retry, String handlerSees) {}

  private record Bad(Outbound message, String detail) {}
}
