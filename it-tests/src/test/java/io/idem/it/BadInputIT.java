package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Outbound;
import io.idem.testkit.DeadLetteredMessage;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 6, item 5, per broker: bad messages among good ones. The consumer keys messages by the
 * {@code idempotency-key} header, else by the payload's JSON field {@code /orderId}. Every bad
 * message ends in the dead-letter destination with a readable reason on the copy (cause and
 * detail headers), every valid one — a key full of SQL metacharacters, a payload close to the
 * broker's size limit, a key taken from the payload — is applied once, the consumer keeps running
 * (a good message published after the bad ones is applied), and nothing is lost: dead letters +
 * effects = what was published.
 */
class BadInputIT {
  private static final Duration TIMEOUT = Duration.ofSeconds(90);
  private static final String KEY = Outbound.KEY_HEADER;
  /** Every character PostgreSQL or a naive SQL string would trip over. */
  private static final String SQL_KEY =
      "'; DROP TABLE idem_processed_events; -- \" \\ % _ $1 ? :key /* */ ` ; ' OR '1'='1";

  private DemoBroker broker;
  private ItDatabase db;
  private BrokerConsumer consumer;
  private String destination;

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      broker.deleteDestination(destination);
      broker.close();
    }
  }

  /**
   * A payload size close to what the broker takes in one message by default: Kafka's
   * {@code max.request.size}/{@code message.max.bytes} of 1 MiB (less room for the record's key,
   * headers and framing), SQS's 256 KiB (body plus attributes), Artemis far above its 100 KiB
   * large-message threshold, RabbitMQ a few MiB.
   */
  private static int hugePayload(String broker) {
    return switch (broker) {
      case "kafka" -> 1024 * 1024 - 4 * 1024;
      case "sqs" -> 256 * 1024 - 2 * 1024;
      case "jms" -> 2 * 1024 * 1024;
      case "rabbitmq" -> 4 * 1024 * 1024;
      default -> throw new IllegalArgumentException(broker);
    };
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"kafka", "rabbitmq", "sqs", "jms"})
  void badMessagesAreDeadLetteredWithAReasonAndGoodOnesAreAppliedOnce(String name) throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    broker = DemoBrokers.create(name);
    System.out.println("[it] " + broker.start());
    destination = "idem-it-bad-input-" + name + "-" + run;
    broker.createDestination(destination);
    db = ItDatabase.direct("it_bad_input_" + name);
    String group = "idem-it-bad-input-" + run;

    IdempotencyKeyExtractor keys =
        IdempotencyKeyExtractor.firstOf(IdempotencyKeyExtractor.header(KEY), IdempotencyKeyExtractor.jsonPointer("/orderId"));
    OutcomeRecorder outcomes = new OutcomeRecorder();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .keyExtractor(keys)
        .handler(ItDatabase.recording(keys))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(200))
            .maxBackoff(Duration.ofSeconds(1)).build())
        .listener(outcomes)
        .build();
    consumer = broker.consumer(destination, pipeline);
    consumer.start();

    int huge = hugePayload(name);
    String conflictKey = run + "-conflict";
    // valid: applied once each
    Map<String, Outbound> valid = new LinkedHashMap<>();
    valid.put(run + "-good-before", Outbound.keyed(run + "-good-before", json("good-before")));
    valid.put(SQL_KEY, Outbound.keyed(SQL_KEY, json("sql-metacharacters")));
    valid.put(run + "-huge", Outbound.keyed(run + "-huge", padded("huge", huge)));
    valid.put(run + "-json-key", new Outbound(Map.of(), ("{\"orderId\":\"" + run + "-json-key\"}").getBytes(StandardCharsets.UTF_8)));
    valid.put(conflictKey, Outbound.keyed(conflictKey, json("conflict-first")));
    broker.publish(destination, List.copyOf(valid.values()));
    await("valid messages applied").atMost(TIMEOUT).until(() -> db.distinctKeys() == valid.size());

    // bad: each dead-lettered with its cause and a detail containing the given text
    List<Bad> bad = new ArrayList<>();
    bad.add(new Bad("no-key", new Outbound(Map.of(), json("no-key")), DeadLetterCause.NO_KEY,
        switch (name) { // the broker's own spelling of the key's header (issue 31)
          case "sqs" -> "no message attribute '" + KEY + "'";
          case "jms" -> "no property '" + KEY.replace('-', '_') + "'";
          default -> "no header '" + KEY + "'";
        }));
    bad.add(new Bad("empty-key", Outbound.keyed("", json("empty-key")), DeadLetterCause.INVALID_KEY,
        "present but blank"));
    bad.add(new Bad("long-key", Outbound.keyed("k".repeat(IdempotencyKey.MAX_LENGTH + 1), json("long-key")),
        DeadLetterCause.INVALID_KEY, "at most " + IdempotencyKey.MAX_LENGTH + " characters, but was "
            + (IdempotencyKey.MAX_LENGTH + 1)));
    bad.add(new Bad("malformed-json", new Outbound(Map.of(),
        ("{\"case\":\"malformed-json\",\"orderId\":\"" + run).getBytes(StandardCharsets.UTF_8)),
        DeadLetterCause.INVALID_KEY, "payload is not valid JSON"));
    bad.add(new Bad("huge-no-key", new Outbound(Map.of(), padded("huge-no-key", huge)), DeadLetterCause.NO_KEY,
        "no payload field /orderId"));
    bad.add(new Bad("conflict-second", Outbound.keyed(conflictKey, json("conflict-second")),
        DeadLetterCause.CONFLICT, "with a different payload"));
    Outbound notUtf8 = new Outbound(Map.of(KEY, new byte[] {'k', (byte) 0xC3, (byte) 0x28, (byte) 0xFF}),
        json("not-utf8"));
    if (broker.supportsBinaryHeaders()) {
      bad.add(new Bad("not-utf8", notUtf8, DeadLetterCause.INVALID_KEY, "is not valid UTF-8"));
    } else {
      // JMS string properties are Java strings: a producer cannot put bytes that are not UTF-8
      // into one, so the case cannot reach a JMS consumer. The demo refuses to publish it rather
      // than send a replacement character and call it the same test.
      assertThat(name).isEqualTo("jms");
      assertThatThrownBy(() -> broker.publish(destination, List.of(notUtf8)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not valid UTF-8");
    }
    List<Outbound> badMessages = bad.stream().map(Bad::message).toList();
    broker.publish(destination, badMessages);
    String after = run + "-good-after";
    broker.publish(destination, List.of(Outbound.keyed(after, json("good-after"))));

    await("the good message after the bad ones applied").atMost(TIMEOUT).until(() -> db.effects(after) == 1);
    await("every bad message dead-lettered, nothing left").atMost(TIMEOUT)
        .until(() -> broker.deadLettered(destination) >= bad.size() && broker.pending(destination, group) == 0);
    assertThat(consumer.isRunning()).isTrue();

    // nothing lost: every bad message is in the dead-letter destination with its reason
    List<DeadLetteredMessage> dead = broker.readDeadLetters(destination);
    assertThat(dead).as("dead letters").hasSize(bad.size());
    for (Bad b : bad) {
      List<DeadLetteredMessage> copies =
          dead.stream().filter(d -> Arrays.equals(d.payload(), b.message().payload())).toList();
      assertThat(copies).as("dead-letter copies of " + b.name()).hasSize(1);
      DeadLetteredMessage copy = copies.get(0);
      assertThat(copy.cause()).as("cause of " + b.name()).isEqualTo(b.cause().name());
      assertThat(copy.detail()).as("detail of " + b.name()).contains(b.detail());
      assertThat(copy.headers()).as("headers of " + b.name())
          .containsEntry(DeadLetterReason.HEADER_CONSUMER_GROUP, group);
      if (name.equals("jms")) {
        // JMS property names are Java identifiers: the copy carries idem_dead_letter_cause
        assertThat(copy.headers()).containsEntry("idem_dead_letter_cause", b.cause().name())
            .containsKey("idem_dead_letter_detail");
      }
    }
    // every valid one applied once, the SQL key stored verbatim, the huge payload whole
    for (String key : valid.keySet()) {
      assertThat(db.effects(key)).as("effects of " + key).isEqualTo(1);
    }
    assertThat(db.effects(after)).isEqualTo(1);
    assertThat(db.totalEffects()).isEqualTo(valid.size() + 1);
    assertThat(db.doubled()).isZero();
    assertThat(db.processedKeys(group)).contains(SQL_KEY).hasSize(valid.size() + 1);
    assertThat(db.payloadLength(run + "-huge")).isEqualTo(huge);
    assertThat(outcomes.count(ProcessingOutcome.DEAD_LETTERED) + outcomes.count(ProcessingOutcome.CONFLICT))
        .isEqualTo(bad.size());
    System.out.printf("[it] %s bad input: %d dead-lettered with reasons, %d applied, payload %d bytes%n",
        name, dead.size(), db.totalEffects(), huge);
  }

  private record Bad(String name, Outbound message, DeadLetterCause cause, String detail) {}

  private static byte[] json(String label) {
    return ("{\"case\":\"" + label + "\",\"at\":\"" + UUID.randomUUID() + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  /** A JSON payload of exactly {@code size} bytes. */
  private static byte[] padded(String label, int size) {
    String head = "{\"case\":\"" + label + "\",\"pad\":\"";
    String tail = "\"}";
    StringBuilder sb = new StringBuilder(size).append(head);
    sb.append("x".repeat(size - head.length() - tail.length())).append(tail);
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }
}
