package io.idem.benchmarks;

import io.idem.fixtures.SqsFixture;
import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;
import io.idem.sqs.SqsInboundMessage;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;

/**
 * SQS: per run a standard queue and its {@code -dlq}. Idem's variants are the README's SQS quick
 * start ({@code deadLetterQueueUrl}, every other default: one worker, receives of 10, deletes
 * batched within 100 ms) except {@code waitTime(1 s)}, so that closing a run's consumer does not
 * wait out a 20 s long poll (with a backlog a receive returns at once, so the rate is the same).
 * All clients, Idem's and the plain consumers', use the SDK's url-connection HTTP client.
 */
final class SqsBench implements BenchBroker {
  /** The long poll of every consumer here. */
  static final Duration WAIT_TIME = Duration.ofSeconds(1);
  private static final StaticCredentialsProvider CREDENTIALS =
      StaticCredentialsProvider.create(AwsBasicCredentials.create("idem", "idem"));
  private final URI endpoint;
  private final String region;
  private final String origin;
  private final SqsClient admin;

  private SqsBench(URI endpoint, String region, String origin) {
    this.endpoint = endpoint;
    this.region = region;
    this.origin = origin;
    this.admin = newClient();
  }

  /** SQS at {@code endpoint} (region us-east-1), else the fixtures' ({@code IDEM_SQS_ENDPOINT}, else in-JVM ElasticMQ). */
  static SqsBench connect(@Nullable String endpoint) {
    if (endpoint != null) {
      return new SqsBench(URI.create(endpoint), "us-east-1", "--sqs-endpoint " + endpoint);
    }
    SqsFixture fixture = SqsFixture.shared();
    return new SqsBench(fixture.endpoint(), fixture.region(), fixture.origin());
  }

  /** A client on this endpoint with the url-connection HTTP client, as Idem's adapter builds its own. */
  SqsClient newClient() {
    return SqsClient.builder().httpClient(UrlConnectionHttpClient.builder()
            .socketTimeout(Duration.ofSeconds(30)).connectionTimeout(Duration.ofSeconds(5)).build())
        .endpointOverride(endpoint).region(Region.of(region)).credentialsProvider(CREDENTIALS).build();
  }

  @Override
  public String name() {
    return "sqs";
  }

  @Override
  public String describe() {
    return "SQS " + origin + ", standard queues";
  }

  @Override
  public String address() {
    return endpoint.toString();
  }

  @Override
  public int defaultBatchSize() {
    return 10;
  }

  private String url(String queue) {
    return admin.getQueueUrl(b -> b.queueName(queue)).queueUrl();
  }

  @Override
  public void create(String id) {
    for (String queue : List.of(id, id + "-dlq")) {
      admin.createQueue(b -> b.queueName(queue).attributes(Map.of(QueueAttributeName.VISIBILITY_TIMEOUT,
          Long.toString(SqsConsumerConfig.DEFAULT_VISIBILITY_TIMEOUT.toSeconds()))));
    }
  }

  @Override
  public void publish(String id, OrderStream stream) {
    String url = url(id);
    List<SendMessageBatchRequestEntry> batch = new ArrayList<>(10);
    for (OrderStream.Order o : stream.records()) {
      batch.add(SendMessageBatchRequestEntry.builder().id(Integer.toString(batch.size()))
          .messageBody(SqsInboundMessage.messageBody(o.payload()))
          .messageAttributes(SqsInboundMessage.messageAttributes(Map.of(OrderStream.KEY_HEADER, o.orderId()), o.payload()))
          .build());
      if (batch.size() == 10) {
        send(url, batch);
      }
    }
    if (!batch.isEmpty()) {
      send(url, batch);
    }
  }

  private void send(String url, List<SendMessageBatchRequestEntry> batch) {
    SendMessageBatchResponse response = admin.sendMessageBatch(b -> b.queueUrl(url).entries(batch));
    if (!response.failed().isEmpty()) {
      throw new IllegalStateException("SQS refused " + response.failed().size() + " messages: " + response.failed());
    }
    batch.clear();
  }

  @Override
  public AutoCloseable start(Variant variant, Run run, BenchDatabase db, Progress progress) throws Exception {
    String url = url(run.destination());
    if (!variant.idem) {
      return new RawSqsConsumer(newClient(), url, run.destination(), db, progress, variant.batched(),
          run.maxBatchSize()).start();
    }
    SqsConsumerConfig.Builder config = SqsConsumerConfig.builder(url)
        .deadLetterQueueUrl(url(run.destination() + "-dlq"))
        .waitTime(WAIT_TIME)
        .concurrency(run.concurrency())
        .endpoint(endpoint).region(region).credentials(CREDENTIALS);
    if (variant.batched()) {
      config.maxBatchSize(run.maxBatchSize());
    } else if (variant == Variant.IDEM_PER_MESSAGE) {
      config.maxBatchSize(1);
    }
    SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config.build(),
        Consumers.pipeline(variant, db, run.destination(), progress));
    consumer.start();
    return consumer;
  }

  @Override
  public void delete(String id) {
    for (String queue : List.of(id, id + "-dlq")) {
      try {
        admin.deleteQueue(b -> b.queueUrl(url(queue)));
      } catch (RuntimeException e) {
        System.err.println("could not delete queue " + queue + ": " + e);
      }
    }
  }

  @Override
  public void close() {
    admin.close();
  }
}
