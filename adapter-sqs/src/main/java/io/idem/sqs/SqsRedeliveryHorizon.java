package io.idem.sqs;

import io.idem.spi.RedeliveryHorizon;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * The redelivery horizon of an SQS queue: its {@code MessageRetentionPeriod} (GetQueueAttributes;
 * 60 seconds to 14 days, default 4 days), after which SQS deletes a message whether or not it was
 * received — so no copy of a message is delivered later than that after it was sent.
 *
 * <p>A server that does not answer the attribute does not expire messages (ElasticMQ): its horizon
 * is unbounded, so a retention job needs {@code acceptReplaysBeyondWindow(true)} there.
 *
 * <p>Not covered: a message moved to a dead-letter queue and redriven back to the source later
 * (StartMessageMoveTask, the console's "redrive"); the DLQ's own retention bounds that, so give
 * that horizon too ({@code SqsRedeliveryHorizon.of(client, dlqUrl)}) when redrives happen.
 *
 * <p>Thread-safe; {@link #read()} makes one call; the client is the caller's (not closed here).
 */
public final class SqsRedeliveryHorizon implements RedeliveryHorizon {
  private final SqsClient client;
  private final String queueUrl;

  private SqsRedeliveryHorizon(SqsClient client, String queueUrl) {
    this.client = Objects.requireNonNull(client, "client");
    this.queueUrl = Objects.requireNonNull(queueUrl, "queueUrl");
  }

  /** The horizon of the queue at {@code queueUrl}, read through {@code client}. */
  public static SqsRedeliveryHorizon of(SqsClient client, String queueUrl) {
    return new SqsRedeliveryHorizon(client, queueUrl);
  }

  /**
   * The queue's {@code MessageRetentionPeriod}; unbounded when the server gives none (ElasticMQ
   * accepts the attribute but ignores it, and keeps messages until they are deleted).
   *
   * @throws IllegalStateException when the queue could not be asked (missing, no permission)
   */
  @Override
  public Horizon read() {
    String source = "sqs queue " + queueUrl;
    Map<QueueAttributeName, String> attributes;
    try {
      attributes = client.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(queueUrl)
          .attributeNames(QueueAttributeName.MESSAGE_RETENTION_PERIOD).build()).attributes();
    } catch (SdkException e) {
      throw new IllegalStateException("could not read the attributes of " + source + ": " + e.getMessage(), e);
    }
    String seconds = attributes.get(QueueAttributeName.MESSAGE_RETENTION_PERIOD);
    if (seconds == null) {
      // Amazon SQS always answers it; a server that does not (ElasticMQ) does not expire messages
      return Horizon.unbounded(source, "no MessageRetentionPeriod: this server does not expire"
          + " messages (ElasticMQ keeps them until deleted)");
    }
    return Horizon.bounded(source, Duration.ofSeconds(Long.parseLong(seconds.trim())),
        "MessageRetentionPeriod=" + seconds + " s");
  }

  @Override
  public String toString() {
    return "SqsRedeliveryHorizon[" + queueUrl + "]";
  }
}
