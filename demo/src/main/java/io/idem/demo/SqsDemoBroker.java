package io.idem.demo;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.spi.OutboxPublisher;
import io.idem.spi.Utf8;
import io.idem.fixtures.SqsFixture;
import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;
import io.idem.sqs.SqsInboundMessage;
import io.idem.sqs.SqsOutboxPublisher;
import io.idem.testkit.DeadLetteredMessage;
import java.time.Instant;
import software.amazon.awssdk.core.SdkBytes;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;

/**
 * The demo on SQS: ElasticMQ in-process (or {@code IDEM_SQS_ENDPOINT}), a standard queue with a
 * short visibility timeout (the adapter's heartbeat extends it for slow messages) and a DLQ.
 */
final class SqsDemoBroker implements DemoBroker {
  private static final Duration VISIBILITY = Duration.ofSeconds(5);
  /** SQS's limit on one message, and on the sum of a batch's messages: 256 KiB. */
  private static final int MAX_BATCH_BYTES = 256 * 1024;
  private @Nullable URI endpoint;
  private String region = "us-east-1";
  private @Nullable SqsClient client;

  SqsDemoBroker(Map<String, String> args) {
    String e = args.get("sqs-endpoint");
    this.endpoint = e == null ? null : URI.create(e);
    if (args.containsKey("sqs-region")) {
      this.region = args.get("sqs-region");
    }
  }

  @Override
  public String name() {
    return "sqs";
  }

  @Override
  public int defaultMaxBatchSize() {
    return SqsConsumerConfig.DEFAULT_MAX_BATCH_SIZE;
  }

  @Override
  public String start() {
    SqsFixture sqs = SqsFixture.shared();
    endpoint = sqs.endpoint();
    region = sqs.region();
    return "SQS: " + sqs.origin();
  }

  private synchronized SqsClient client() {
    if (client == null) {
      client = SqsClient.builder()
          .endpointOverride(endpoint)
          .region(Region.of(region))
          .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem")))
          .build();
    }
    return client;
  }

  private String url(String queue) {
    return client().getQueueUrl(b -> b.queueName(queue)).queueUrl();
  }

  @Override
  public void createDestination(String queue) {
    client().createQueue(b -> b.queueName(queue + "-dlq"));
    client().createQueue(b -> b.queueName(queue).attributes(Map.of(
        QueueAttributeName.VISIBILITY_TIMEOUT, Long.toString(VISIBILITY.toSeconds()))));
  }

  @Override
  public void publish(String queue, List<Outbound> messages) {
    String url = url(queue);
    List<SendMessageBatchRequestEntry> batch = new ArrayList<>();
    int batchBytes = 0;
    for (Outbound m : messages) {
      Map<String, String> text = new LinkedHashMap<>();
      Map<String, MessageAttributeValue> binary = new LinkedHashMap<>();
      m.headers().forEach((name, value) -> {
        if (Utf8.isValid(value)) {
          text.put(name, new String(value, StandardCharsets.UTF_8));
        } else {
          binary.put(name, MessageAttributeValue.builder().dataType("Binary")
              .binaryValue(SdkBytes.fromByteArray(value)).build());
        }
      });
      // the adapter's own helpers carry binary bodies (Base64) and empty values across SQS
      Map<String, MessageAttributeValue> attributes =
          new LinkedHashMap<>(SqsInboundMessage.messageAttributes(text, m.payload()));
      attributes.putAll(binary);
      String body = SqsInboundMessage.messageBody(m.payload());
      int size = sizeOf(body, attributes);
      if (!batch.isEmpty() && batchBytes + size > MAX_BATCH_BYTES) {
        send(url, batch); // SQS limits a whole batch to what one message may hold
        batchBytes = 0;
      }
      batch.add(SendMessageBatchRequestEntry.builder()
          .id(Integer.toString(batch.size()))
          .messageBody(body)
          .messageAttributes(attributes)
          .build());
      batchBytes += size;
      if (batch.size() == 10) {
        send(url, batch);
        batchBytes = 0;
      }
    }
    if (!batch.isEmpty()) {
      send(url, batch);
    }
  }

  /** Bytes SQS counts for a message: the body plus each attribute's name, type and value. */
  private static int sizeOf(String body, Map<String, MessageAttributeValue> attributes) {
    int size = body.getBytes(StandardCharsets.UTF_8).length;
    for (Map.Entry<String, MessageAttributeValue> a : attributes.entrySet()) {
      MessageAttributeValue v = a.getValue();
      size += a.getKey().getBytes(StandardCharsets.UTF_8).length
          + v.dataType().getBytes(StandardCharsets.UTF_8).length
          + (v.stringValue() != null ? v.stringValue().getBytes(StandardCharsets.UTF_8).length : 0)
          + (v.binaryValue() != null ? v.binaryValue().asByteArray().length : 0);
    }
    return size;
  }

  private void send(String url, List<SendMessageBatchRequestEntry> batch) {
    SendMessageBatchResponse response = client().sendMessageBatch(b -> b.queueUrl(url).entries(batch));
    if (!response.failed().isEmpty()) {
      throw new IllegalStateException("SQS refused " + response.failed().size() + " messages: " + response.failed());
    }
    batch.clear();
  }

  @Override
  public List<String> connectionArgs() {
    return List.of("--sqs-endpoint=" + endpoint, "--sqs-region=" + region);
  }

  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline) {
    return consumer(queue, pipeline, 1);
  }

  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize) {
    return consumer(queue, pipeline, maxBatchSize, null);
  }

  /** With {@code crashes}: the adapter runs on this broker's client wrapped by it (only this consumer). */
  @Override
  public BrokerConsumer consumer(String queue, IdempotentConsumer<?> pipeline, int maxBatchSize,
      @Nullable BrokerCallCrashes crashes) {
    String deadLetterQueueUrl = url(queue + "-dlq");
    SqsConsumerConfig config = SqsConsumerConfig.builder(url(queue))
        .maxBatchSize(maxBatchSize)
        .deadLetterQueueUrl(deadLetterQueueUrl)
        .visibilityTimeout(VISIBILITY)
        .waitTime(Duration.ofSeconds(1))
        .concurrency(4)
        .shutdownTimeout(Duration.ofSeconds(20))
        .build();
    return SqsIdempotentConsumer.create(config, pipeline, crashes == null ? client() : crashes.sqs(client(), deadLetterQueueUrl));
  }

  /** Deletes go in batches of up to ten ({@code DeleteMessageBatch}, SQS's limit per call). */
  @Override
  public long settlingCallsAtLeast(long messages, int maxBatchSize) {
    return messages / 10;
  }

  /** {@link SqsOutboxPublisher} on this broker's client (closed with the broker). */
  @Override
  public OutboxPublisher outboxPublisher() {
    return SqsOutboxPublisher.create(client());
  }

  /** SQS publishers send to a queue URL. */
  @Override
  public String outboxDestination(String queue) {
    return url(queue);
  }

  @Override
  public long pending(String queue, String group) {
    Map<QueueAttributeName, String> attributes = client().getQueueAttributes(b -> b.queueUrl(url(queue))
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE)).attributes();
    return Long.parseLong(attributes.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES))
        + Long.parseLong(attributes.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
  }

  @Override
  public long deadLettered(String queue) {
    return Long.parseLong(client().getQueueAttributes(b -> b.queueUrl(url(queue + "-dlq"))
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES)).attributes()
        .get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
  }

  @Override
  public List<DeadLetteredMessage> readDeadLetters(String queue) {
    String dlq = url(queue + "-dlq");
    Map<String, Message> seen = new LinkedHashMap<>();
    // received (hidden for a minute, so none comes twice), then made visible again
    for (List<Message> batch = receive(dlq); !batch.isEmpty(); batch = receive(dlq)) {
      batch.forEach(m -> seen.putIfAbsent(m.messageId(), m));
    }
    List<DeadLetteredMessage> out = new ArrayList<>();
    List<ChangeMessageVisibilityBatchRequestEntry> back = new ArrayList<>();
    for (Message m : seen.values()) {
      SqsInboundMessage read = SqsInboundMessage.of(queue + "-dlq", m, Instant.now());
      out.add(new DeadLetteredMessage(read.headers(), read.payload()));
      back.add(ChangeMessageVisibilityBatchRequestEntry.builder().id(Integer.toString(back.size()))
          .receiptHandle(m.receiptHandle()).visibilityTimeout(0).build());
      if (back.size() == 10) {
        List<ChangeMessageVisibilityBatchRequestEntry> entries = List.copyOf(back);
        client().changeMessageVisibilityBatch(b -> b.queueUrl(dlq).entries(entries));
        back.clear();
      }
    }
    if (!back.isEmpty()) {
      client().changeMessageVisibilityBatch(b -> b.queueUrl(dlq).entries(back));
    }
    return out;
  }

  private List<Message> receive(String url) {
    return client().receiveMessage(b -> b.queueUrl(url).maxNumberOfMessages(10).waitTimeSeconds(1)
        .visibilityTimeout(60).messageAttributeNames("All")
        .messageSystemAttributeNames(MessageSystemAttributeName.ALL)).messages();
  }

  @Override
  public void deleteDestination(String queue) {
    for (String q : List.of(queue, queue + "-dlq")) {
      try {
        client().deleteQueue(b -> b.queueUrl(url(q)));
      } catch (RuntimeException e) {
        System.err.println("could not delete " + q + ": " + e.getMessage());
      }
    }
  }

  @Override
  public void close() {
    if (client != null) {
      client.close();
    }
  }
}
