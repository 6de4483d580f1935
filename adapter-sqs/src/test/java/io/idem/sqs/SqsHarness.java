package io.idem.sqs;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.fixtures.SqsFixture;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * A fresh queue and its dead-letter queue on {@link SqsFixture}; FIFO when asked (then the
 * message group is the key header, and every publish gets its own deduplication id so that a
 * deliberate re-publish reaches the consumer).
 */
final class SqsHarness implements BrokerHarness {
  static final Duration WAIT_TIME = Duration.ofSeconds(1);

  private final SqsFixture fixture = SqsFixture.shared();
  private final SqsClient sqs = fixture.newClient();
  private final String name;
  private final boolean fifo;
  private final String queueUrl;
  private final String dlqUrl;
  private final UnaryOperator<SqsConsumerConfig.Builder> tuning;
  private final List<DeadLetteredMessage> deadLetters = new CopyOnWriteArrayList<>();
  private final List<BrokerConsumer> consumers = new CopyOnWriteArrayList<>();

  SqsHarness(String name, boolean fifo) {
    this(name, fifo, Map.of(), UnaryOperator.identity());
  }

  SqsHarness(String name, boolean fifo, Map<QueueAttributeName, String> queueAttributes,
      UnaryOperator<SqsConsumerConfig.Builder> tuning) {
    String suffix = fifo ? ".fifo" : "";
    this.name = name + suffix;
    this.fifo = fifo;
    this.tuning = tuning;
    this.dlqUrl = fixture.createQueue(sqs, name + "-dlq" + suffix, Map.of());
    this.queueUrl = fixture.createQueue(sqs, this.name, queueAttributes);
  }

  SqsClient client() {
    return sqs;
  }

  String queueUrl() {
    return queueUrl;
  }

  String dlqUrl() {
    return dlqUrl;
  }

  /** The configuration kit consumers use: short long-poll so that close() is quick. */
  SqsConsumerConfig.Builder config() {
    return SqsConsumerConfig.builder(queueUrl)
        .deadLetterQueueUrl(dlqUrl)
        .waitTime(WAIT_TIME)
        .visibilityTimeout(Duration.ofSeconds(10))
        .shutdownTimeout(Duration.ofSeconds(20))
        .endpoint(fixture.endpoint())
        .region(fixture.region())
        .credentials(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
            software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create("idem", "idem")));
  }

  @Override
  public String destination() {
    return name;
  }

  @Override
  public void publish(Map<String, String> headers, byte[] payload) {
    publish(headers, payload, fifoGroup(headers.getOrDefault(IdempotencyKeyExtractor.DEFAULT_HEADER, "default")));
  }

  /**
   * The key as FIFO message group; a key SQS does not take as a group (over 128 characters, or
   * other than alphanumeric and punctuation) is grouped by its SHA-256 instead, so that the kit's
   * invalid keys still reach the consumer.
   */
  private static String fifoGroup(String key) {
    if (key.length() <= 128 && key.matches("[\\p{Alnum}\\p{Punct}]+")) {
      return key;
    }
    try {
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
          .digest(key.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Publishes with an explicit FIFO message group (ignored on a standard queue). */
  void publish(Map<String, String> headers, byte[] payload, String group) {
    SendMessageRequest.Builder request = SendMessageRequest.builder()
        .queueUrl(queueUrl)
        .messageBody(SqsInboundMessage.messageBody(payload))
        .messageAttributes(SqsInboundMessage.messageAttributes(headers, payload));
    if (fifo) {
      request.messageGroupId(group).messageDeduplicationId(UUID.randomUUID().toString());
    }
    sqs.sendMessage(request.build());
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    BrokerConsumer consumer = SqsIdempotentConsumer.create(tuning.apply(config()).build(), pipeline);
    consumers.add(consumer);
    return consumer;
  }

  @Override
  public List<DeadLetteredMessage> deadLetters() {
    for (List<Message> batch = receiveDeadLetters(); !batch.isEmpty(); batch = receiveDeadLetters()) {
      for (Message message : batch) {
        SqsInboundMessage read = SqsInboundMessage.of(name, message, Instant.now());
        deadLetters.add(new DeadLetteredMessage(read.headers(), read.payload()));
        sqs.deleteMessage(b -> b.queueUrl(dlqUrl).receiptHandle(message.receiptHandle()));
      }
    }
    return new ArrayList<>(deadLetters);
  }

  private List<Message> receiveDeadLetters() {
    return sqs.receiveMessage(b -> b.queueUrl(dlqUrl).maxNumberOfMessages(10).waitTimeSeconds(0)
        .messageAttributeNames("All").messageSystemAttributeNames(MessageSystemAttributeName.ALL)).messages();
  }

  @Override
  public long pendingCount() {
    return pendingCount(queueUrl);
  }

  /** Visible plus in-flight plus delayed messages of a queue (exact on ElasticMQ, approximate on AWS). */
  long pendingCount(String url) {
    Map<QueueAttributeName, String> attributes = sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE,
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED)).attributes();
    return attributes.values().stream().mapToLong(Long::parseLong).sum();
  }

  long visibleCount() {
    return Long.parseLong(sqs.getQueueAttributes(b -> b.queueUrl(queueUrl)
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES)).attributes()
        .get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
  }

  long inFlightCount() {
    return Long.parseLong(sqs.getQueueAttributes(b -> b.queueUrl(queueUrl)
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE)).attributes()
        .get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
  }

  @Override
  public void close() {
    consumers.forEach(BrokerConsumer::close);
    fixture.deleteQueue(sqs, queueUrl);
    fixture.deleteQueue(sqs, dlqUrl);
    sqs.close();
  }
}
