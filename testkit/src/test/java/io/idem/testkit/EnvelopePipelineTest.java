package io.idem.testkit;

import static io.idem.testkit.SampleEnvelopes.CLOUDEVENTS_JSON;
import static org.assertj.core.api.Assertions.assertThat;

import io.idem.BatchOrder;
import io.idem.DeadLetterCause;
import io.idem.EnvelopeFormat;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.Unwrapping;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Issue 17 through the pipeline: the envelope is opened once, before the key; the handler and the
 * fingerprint see the producer's event, so a producer retry of each shape — new platform ids, same
 * content — is a DUPLICATE, never a CONFLICT; an envelope that cannot be opened is dead-lettered
 * with the reason. Per message and in batch mode alike.
 */
class EnvelopePipelineTest {
  private static final String ORDER = "{\"orderId\":42,\"amount\":12.50}";

  private final InMemoryProcessedEventStore store = new InMemoryProcessedEventStore();
  private final List<String> seen = new ArrayList<>();
  private final List<String> keys = new ArrayList<>();
  private final List<String> brokerIds = new ArrayList<>();
  private final List<Object> natives = new ArrayList<>();

  private IdempotentConsumer.Builder<InMemoryTransaction> pipeline() {
    return IdempotentConsumer.builder(store).consumerGroup("billing").handler((key, message, tx) -> {
      seen.add(new String(message.payload(), StandardCharsets.UTF_8));
      keys.add(key.source() + ":" + key.value());
      brokerIds.add(message.brokerMessageId());
      natives.add(message.unwrap(StringBuilder.class).orElse(null));
    });
  }

  private static InboundMessage delivery(byte[] body, String brokerId, String... headers) {
    InboundMessage.Builder b = InboundMessage.builder("orders", body).brokerMessageId(brokerId)
        .nativeMessage(new StringBuilder(brokerId));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return b.build();
  }

  private static InboundMessage sns(String message, Map<String, String> attributes, int attempt) {
    return delivery(SampleEnvelopes.snsNotification(message, attributes, null, attempt), "sqs-" + attempt);
  }

  /** Processes each delivery on its own, returns the outcomes and the acknowledgements. */
  private List<ProcessingOutcome> process(IdempotentConsumer<InMemoryTransaction> consumer,
      List<RecordingAcknowledgement> acks, InboundMessage... deliveries) {
    List<ProcessingOutcome> outcomes = new ArrayList<>();
    for (InboundMessage delivery : deliveries) {
      RecordingAcknowledgement ack = new RecordingAcknowledgement();
      acks.add(ack);
      outcomes.add(consumer.process(delivery, ack));
    }
    return outcomes;
  }

  @Test
  void anSnsProducerRetryIsADuplicateAndTheHandlerSawTheMessage() {
    var consumer = pipeline().build();
    Map<String, String> attributes = Map.of("idempotency-key", "order-42");
    List<RecordingAcknowledgement> acks = new ArrayList<>();
    assertThat(process(consumer, acks, sns(ORDER, attributes, 1), sns(ORDER, attributes, 2)))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(seen).containsExactly(ORDER);
    assertThat(keys).containsExactly("HEADER:order-42");
    assertThat(brokerIds).containsExactly("sqs-1");
    assertThat(natives).extracting(String::valueOf).containsExactly("sqs-1");
    // other content under the same key is still a conflict: the fingerprint is the event's
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(consumer.process(sns("{\"orderId\":42,\"amount\":99}", attributes, 3), ack))
        .isEqualTo(ProcessingOutcome.CONFLICT);
  }

  @Test
  void aCloudEventRetryIsADuplicateInStructuredAndBinaryModeAlike() {
    var consumer = pipeline().build();
    InboundMessage structured = delivery(SampleEnvelopes.cloudEvent("/orders", "A-1", ORDER), "k-1",
        "content-type", CLOUDEVENTS_JSON);
    InboundMessage again = delivery(SampleEnvelopes.cloudEvent("/orders", "A-1", ORDER), "k-2",
        "Content-Type", CLOUDEVENTS_JSON + "; charset=utf-8");
    InboundMessage binary = delivery(ORDER.getBytes(StandardCharsets.UTF_8), "k-3",
        "ce_id", "A-1", "ce_source", "/orders", "ce_specversion", "1.0", "ce_type", "com.example.OrderPaid");
    InboundMessage bySqsShape = delivery(SampleEnvelopes.cloudEvent("/orders", "A-1", ORDER), "k-4");
    assertThat(process(consumer, new ArrayList<>(), structured, again, binary, bySqsShape)).containsExactly(
        ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE, ProcessingOutcome.DUPLICATE,
        ProcessingOutcome.DUPLICATE);
    assertThat(keys).containsExactly("CLOUDEVENTS:/orders A-1");
    assertThat(seen).containsExactly("{\"orderId\":42,\"amount\":12.50}");
  }

  @Test
  void anEventBridgeRePutIsADuplicateWithOneLineOfConfiguration() {
    var consumer = pipeline().envelope(EnvelopeFormat.eventBridge())
        .keyExtractor(IdempotencyKeyExtractor.jsonPointer("/orderId")).build();
    String detail = "{\"orderId\":\"o-42\",\"amount\":12.5}";
    assertThat(process(consumer, new ArrayList<>(),
        delivery(SampleEnvelopes.eventBridge("OrderPaid", detail, 1), "sqs-1"),
        delivery(SampleEnvelopes.eventBridge("OrderPaid", detail, 2), "sqs-2")))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(seen).containsExactly(detail);
    assertThat(keys).containsExactly("PAYLOAD:o-42");
  }

  @Test
  void debeziumOutboxAndWebhookRetriesAreDuplicates() {
    var debezium = pipeline().consumerGroup("outbox").keyExtractor(IdempotencyKeyExtractor.header("id")).build();
    assertThat(process(debezium, new ArrayList<>(),
        delivery(ORDER.getBytes(StandardCharsets.UTF_8), "orders-0@7", "id", "e5b7c8f0-row-1"),
        delivery(ORDER.getBytes(StandardCharsets.UTF_8), "orders-0@8", "id", "e5b7c8f0-row-1")))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    var webhooks = pipeline().consumerGroup("webhooks").keyExtractor(IdempotencyKeyExtractor.jsonPointer("/id")).build();
    byte[] event = "{\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"amount\":2000}}}"
        .getBytes(StandardCharsets.UTF_8);
    assertThat(process(webhooks, new ArrayList<>(), delivery(event, "w-1"), delivery(event, "w-2")))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(keys).containsExactly("HEADER:e5b7c8f0-row-1", "PAYLOAD:evt_1");
  }

  @Test
  void nestedEnvelopesAreOpenedInside() {
    // an SNS notification whose message is a structured CloudEvent (SNS has no content type)
    String event = new String(SampleEnvelopes.cloudEvent("/orders", "A-7", ORDER), StandardCharsets.UTF_8);
    var consumer = pipeline().build();
    assertThat(process(consumer, new ArrayList<>(), sns(event, Map.of(), 1), sns(event, Map.of(), 2)))
        .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(keys).containsExactly("CLOUDEVENTS:/orders A-7");
    assertThat(seen).containsExactly("{\"orderId\":42,\"amount\":12.50}");
  }

  /** Review of issue 17: the inner event was processed; the event carrying it is another effect. */
  @Test
  void aCloudEventCarryingACloudEventIsKeyedByTheOuterEvent() {
    String inner = new String(SampleEnvelopes.cloudEvent("/orders", "A-1", ORDER), StandardCharsets.UTF_8);
    String outer = "{\"specversion\":\"1.0\",\"id\":\"audit-9\",\"source\":\"/audit\",\"type\":\"Replayed\","
        + "\"data\":" + inner + "}";
    for (String[] contentType : new String[][] {{}, {"content-type", CLOUDEVENTS_JSON}}) {
      var consumer = pipeline().consumerGroup("billing-" + contentType.length).build();
      seen.clear();
      keys.clear();
      assertThat(process(consumer, new ArrayList<>(),
          delivery(inner.getBytes(StandardCharsets.UTF_8), "k-1", contentType),
          delivery(outer.getBytes(StandardCharsets.UTF_8), "k-2", contentType)))
          .containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.PROCESSED);
      assertThat(keys).containsExactly("CLOUDEVENTS:/orders A-1", "CLOUDEVENTS:/audit audit-9");
      assertThat(seen).containsExactly(ORDER, inner);
    }
  }

  /** Review of issue 17: a keyless reason says the key was looked for inside the envelope. */
  @Test
  void aKeylessReasonNamesTheEnvelopeThatWasOpened() {
    var consumer = pipeline().build();
    List<RecordingAcknowledgement> acks = new ArrayList<>();
    assertThat(process(consumer, acks, sns(ORDER, Map.of(), 1), delivery(ORDER.getBytes(StandardCharsets.UTF_8), "k-1")))
        .containsOnly(ProcessingOutcome.DEAD_LETTERED);
    assertThat(acks.get(0).reason.cause()).isEqualTo(DeadLetterCause.NO_KEY);
    assertThat(acks.get(0).reason.detail()).startsWith("no idempotency key")
        .endsWith(" (in the event inside the SNS notification)");
    assertThat(acks.get(1).reason.detail()).doesNotContain("inside");
  }

  /** Review of issue 17: JSON that only resembles an envelope is the producer's body, untouched. */
  @Test
  void bodiesThatOnlyResembleAnEnvelopeReachTheHandlerIntact() {
    var consumer = pipeline().keyExtractor(IdempotencyKeyExtractor.jsonPointer("/requestId")).build();
    List<String> bodies = List.of(
        "{\"requestId\":\"r-1\",\"Type\":\"Notification\",\"TopicArn\":\"arn:aws:sns:eu-west-1:1:alerts\","
            + "\"Subject\":\"Disk full\",\"Message\":\"host-7 at 98%\"}",
        "{\"requestId\":\"r-2\",\"specversion\":\"2\",\"id\":\"c-1\",\"source\":\"crm\",\"type\":\"t\","
            + "\"name\":\"Ada\"}",
        "{\"requestId\":\"r-3\",\"specversion\":\"1.0\",\"id\":\"c-1\",\"source\":\"crm\",\"type\":\"t\","
            + "\"customer\":{\"name\":\"Ada\"}}");
    List<RecordingAcknowledgement> acks = new ArrayList<>();
    assertThat(process(consumer, acks, bodies.stream().map(body -> delivery(body.getBytes(StandardCharsets.UTF_8),
        "sqs-" + body.length())).toArray(InboundMessage[]::new))).containsOnly(ProcessingOutcome.PROCESSED);
    assertThat(seen).containsExactlyElementsOf(bodies);
    assertThat(keys).containsExactly("PAYLOAD:r-1", "PAYLOAD:r-2", "PAYLOAD:r-3");
  }

  @Test
  void nestingIsBoundedByMaxDepth() {
    String inner = ORDER;
    for (int depth = 1; depth <= EnvelopeFormat.MAX_DEPTH; depth++) {
      inner = new String(SampleEnvelopes.snsNotification(inner, Map.of("idempotency-key", "deep-" + depth), null, depth),
          StandardCharsets.UTF_8);
    }
    var consumer = pipeline().build();
    assertThat(consumer.process(delivery(inner.getBytes(StandardCharsets.UTF_8), "sqs-4"), new RecordingAcknowledgement()))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    // the innermost attributes win: each envelope's headers extend the one around it
    assertThat(keys).containsExactly("HEADER:deep-1");
    assertThat(seen).containsExactly(ORDER);
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    byte[] tooDeep = SampleEnvelopes.snsNotification(inner, Map.of(), null, 9);
    assertThat(consumer.process(delivery(tooDeep, "sqs-5"), ack)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.detail()).contains("more than " + EnvelopeFormat.MAX_DEPTH + " envelopes");
  }

  @Test
  void envelopesThatCannotBeOpenedAreDeadLetteredWithTheReason() {
    var consumer = pipeline().build();
    String noMessage = new String(SampleEnvelopes.snsNotification("x", Map.of("idempotency-key", "k"), null, 1),
        StandardCharsets.UTF_8).replace("\"Message\":\"x\",", "\"Message\":{\"a\":1},");
    List<RecordingAcknowledgement> acks = new ArrayList<>();
    assertThat(process(consumer, acks,
        delivery(noMessage.getBytes(StandardCharsets.UTF_8), "sqs-1"),
        delivery("{\"specversion\":\"1.0\",".getBytes(StandardCharsets.UTF_8), "k-1", "content-type", CLOUDEVENTS_JSON),
        delivery(SampleEnvelopes.cloudEventBatch("/orders", "B-1", "B-2", ORDER), "k-2",
            "content-type", SampleEnvelopes.CLOUDEVENTS_BATCH_JSON)))
        .containsOnly(ProcessingOutcome.DEAD_LETTERED);
    assertThat(acks).allSatisfy(ack -> {
      assertThat(ack.calls).containsExactly("deadLetter");
      assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
      assertThat(ack.reason.key()).isNull();
    });
    assertThat(acks.get(0).reason.detail()).contains("SNS notification").contains("'Message' is a JSON object");
    assertThat(acks.get(1).reason.detail()).contains("CloudEvents structured mode").contains("invalid JSON");
    assertThat(acks.get(2).reason.detail()).contains("batch mode");
    assertThat(seen).isEmpty();
  }

  @Test
  void aBatchSeesTheSameEventsAsProcess() {
    var consumer = pipeline().build();
    Map<String, String> attributes = Map.of("idempotency-key", "order-43");
    List<InboundMessage> batch = List.of(sns(ORDER, attributes, 1),
        delivery(("{\"Type\":\"Notification\",\"TopicArn\":\"arn\",\"MessageId\":\"m\",\"Message\":{\"a\":1},"
            + "\"Timestamp\":\"2026-12-01T08:00:00.000Z\"}").getBytes(StandardCharsets.UTF_8), "sqs-x"),
        sns(ORDER, attributes, 2),
        delivery(SampleEnvelopes.cloudEvent("/orders", "A-9", ORDER), "sqs-y"));
    List<RecordingAcknowledgement> acks = List.of(new RecordingAcknowledgement(), new RecordingAcknowledgement(),
        new RecordingAcknowledgement(), new RecordingAcknowledgement());
    assertThat(consumer.processBatch(batch, List.copyOf(acks), BatchOrder.ORDERED).outcomes()).containsExactly(
        ProcessingOutcome.PROCESSED, ProcessingOutcome.DEAD_LETTERED, ProcessingOutcome.DUPLICATE,
        ProcessingOutcome.PROCESSED);
    assertThat(acks.get(1).reason.detail()).contains("'Message' is a JSON object");
    assertThat(seen).containsExactly(ORDER, ORDER);
    assertThat(keys).containsExactly("HEADER:order-43", "CLOUDEVENTS:/orders A-9");
    // and a later redelivery of the batch through process is all duplicates
    assertThat(process(consumer, new ArrayList<>(), sns(ORDER, attributes, 3)))
        .containsExactly(ProcessingOutcome.DUPLICATE);
  }

  @Test
  void standardEnvelopesCanBeTurnedOffAndCustomFormatsAdded() {
    var off = pipeline().standardEnvelopes(false).build();
    RecordingAcknowledgement ack = new RecordingAcknowledgement();
    assertThat(off.process(sns(ORDER, Map.of("idempotency-key", "k"), 1), ack))
        .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(ack.reason.cause()).isEqualTo(DeadLetterCause.NO_KEY);

    // a custom format: "v1|<key>|<body>" lines, and one that throws
    EnvelopeFormat pipes = message -> {
      String text = new String(message.payload(), StandardCharsets.UTF_8);
      if (!text.startsWith("v1|")) {
        return Unwrapping.notRecognized();
      }
      String[] parts = text.split("\\|", 3);
      return Unwrapping.unwrapped(EnvelopeFormat.unwrapped(message, Map.of("idempotency-key", parts[1]),
          java.util.Set.of(), parts[2].getBytes(StandardCharsets.UTF_8)), "pipes");
    };
    var custom = pipeline().consumerGroup("custom").envelope(pipes).build();
    assertThat(process(custom, new ArrayList<>(), delivery("v1|p-1|body".getBytes(StandardCharsets.UTF_8), "x-1")))
        .containsExactly(ProcessingOutcome.PROCESSED);
    assertThat(seen).containsExactly("body");
    assertThat(keys).containsExactly(KeySource.HEADER + ":p-1");
    // a format that throws: dead-lettered with the reason, never processed without opening it
    var throwing = pipeline().consumerGroup("throwing")
        .envelope(message -> { throw new IllegalStateException("boom"); }).build();
    RecordingAcknowledgement failed = new RecordingAcknowledgement();
    assertThat(throwing.process(delivery("{}".getBytes(StandardCharsets.UTF_8), "x-2"), failed))
        .isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(failed.reason.cause()).isEqualTo(DeadLetterCause.INVALID_KEY);
    assertThat(failed.reason.detail()).contains("envelope format").contains("boom");
  }
}
