package io.idem.sqs;

import io.idem.spi.RedeliveryHorizon;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.GetQueueAttributesRequest;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * The redelivery horizon of an SQS queue (GetQueueAttributes), from Amazon SQS's rules:
 *
 * <ul>
 *   <li>SQS deletes a message {@code MessageRetentionPeriod} after it was sent (60 seconds to 14
 *       days, default 4 days), whether or not it was received: without a dead-letter queue, no
 *       copy of a message is delivered later than that after it was sent;
 *   <li>with a {@code RedrivePolicy}, a message received {@code maxReceiveCount} times moves to
 *       the dead-letter queue. In a <b>standard</b> queue it keeps its original enqueue timestamp,
 *       so it stays there until the DLQ's own retention, counted from when it was first sent; in
 *       a <b>FIFO</b> queue the timestamp is reset on the move, so it can stay the source's
 *       retention plus the DLQ's;
 *   <li>a DLQ redrive (StartMessageMoveTask, the console's "redrive") moves it back as a new
 *       message, with a new enqueue time (and message ID): it can then be delivered for the
 *       source's retention once more.
 * </ul>
 *
 * <p>So with a {@code RedrivePolicy} the horizon covers one redrive back to the source at the
 * last moment: standard {@code dlqRetention + sourceRetention}, FIFO {@code sourceRetention +
 * dlqRetention + sourceRetention} ({@link #horizonOf}); without one, {@code sourceRetention}. A
 * second redrive of the same message (moved to the DLQ again, redriven again) is a replay you
 * start yourself, like a Kafka offset reset (docs/STORE.md). When you never redrive into this
 * queue, or the idempotency key is the SQS message ID ({@code
 * IdempotencyKeyExtractor.brokerMessageId()}: a redriven message has a new ID, so no marker
 * matches it whatever the window), take {@link #withoutRedrive()}. The default keys (a
 * producer-set header, a CloudEvents id) survive a redrive.
 *
 * <p>A server that does not answer {@code MessageRetentionPeriod} (for the queue or its DLQ) does
 * not expire messages (ElasticMQ): the horizon is unbounded, so a retention job needs {@code
 * acceptReplaysBeyondWindow(true)} there.
 *
 * <p>Thread-safe; {@link #read()} makes one call, two with a {@code RedrivePolicy} (the DLQ's
 * retention; its URL is found with GetQueueUrl from the policy's ARN); the client is the
 * caller's (not closed here).
 */
public final class SqsRedeliveryHorizon implements RedeliveryHorizon {
  /** {@code arn:aws:sqs:<region>:<account>:<name>}, the form of a RedrivePolicy's target. */
  private static final Pattern TARGET_ARN =
      Pattern.compile("\"deadLetterTargetArn\"\\s*:\\s*\"arn:[^:\"]+:sqs:[^:\"]*:([^:\"]*):([^:\"]+)\"");

  private final SqsClient client;
  private final String queueUrl;
  private final boolean redrive;

  private SqsRedeliveryHorizon(SqsClient client, String queueUrl, boolean redrive) {
    this.client = Objects.requireNonNull(client, "client");
    this.queueUrl = Objects.requireNonNull(queueUrl, "queueUrl");
    this.redrive = redrive;
  }

  /** The horizon of the queue at {@code queueUrl}, read through {@code client}, covering a redrive from its DLQ. */
  public static SqsRedeliveryHorizon of(SqsClient client, String queueUrl) {
    return new SqsRedeliveryHorizon(client, queueUrl, true);
  }

  /**
   * The same queue's horizon without its dead-letter queue: {@code MessageRetentionPeriod} alone.
   * Only when no DLQ redrive ever moves its messages back, or the idempotency key is the message
   * ID (which a redrive changes).
   */
  public SqsRedeliveryHorizon withoutRedrive() {
    return new SqsRedeliveryHorizon(client, queueUrl, false);
  }

  /**
   * The longest a message of a queue can still be delivered after it was first sent.
   *
   * @param sourceRetention the queue's {@code MessageRetentionPeriod}
   * @param dlqRetention its dead-letter queue's {@code MessageRetentionPeriod}, or null when it has
   *     none (or no redrive back to it happens)
   * @param fifo whether the queues are FIFO (the DLQ resets the enqueue timestamp)
   */
  public static Duration horizonOf(Duration sourceRetention, @Nullable Duration dlqRetention, boolean fifo) {
    Objects.requireNonNull(sourceRetention, "sourceRetention");
    if (dlqRetention == null) {
      return sourceRetention;
    }
    // the last moment a message is still in the DLQ, then one redrive: a new message in the source
    Duration lastInDlq = fifo ? sourceRetention.plus(dlqRetention) : dlqRetention;
    return lastInDlq.plus(sourceRetention);
  }

  /**
   * The horizon as above; unbounded when the server gives no {@code MessageRetentionPeriod}
   * (ElasticMQ accepts the attribute but ignores it, and keeps messages until they are deleted).
   *
   * @throws IllegalStateException when the queue or its dead-letter queue could not be asked
   *     (missing, no permission)
   */
  @Override
  public Horizon read() {
    String source = "sqs queue " + queueUrl;
    Map<QueueAttributeName, String> attributes = attributes(queueUrl, source);
    String seconds = attributes.get(QueueAttributeName.MESSAGE_RETENTION_PERIOD);
    String policy = redrive ? attributes.get(QueueAttributeName.REDRIVE_POLICY) : null;
    boolean fifo = Boolean.parseBoolean(attributes.getOrDefault(QueueAttributeName.FIFO_QUEUE, "false"));
    String dlqUrl = null;
    String dlqSeconds = null;
    if (policy != null && !policy.isBlank()) {
      Matcher target = TARGET_ARN.matcher(policy);
      if (!target.find()) {
        throw new IllegalStateException("the RedrivePolicy of " + source + " names no SQS queue ARN: " + policy);
      }
      dlqUrl = dlqUrl(target.group(1), target.group(2), source);
      dlqSeconds = attributes(dlqUrl, "sqs queue " + dlqUrl).get(QueueAttributeName.MESSAGE_RETENTION_PERIOD);
    }
    String dlq = dlqUrl == null ? (redrive ? ", no RedrivePolicy" : ", redrive not counted")
        : ", dead-letter queue " + dlqUrl + " MessageRetentionPeriod="
            + (dlqSeconds == null ? "none" : dlqSeconds + " s");
    if (seconds == null || (dlqUrl != null && dlqSeconds == null)) {
      // Amazon SQS always answers it; a server that does not (ElasticMQ) does not expire messages
      return Horizon.unbounded(source, "MessageRetentionPeriod=" + (seconds == null ? "none" : seconds + " s")
          + dlq + ": this server does not expire messages (ElasticMQ keeps them until deleted)");
    }
    Duration retention = Duration.ofSeconds(Long.parseLong(seconds.trim()));
    String basis = "MessageRetentionPeriod=" + seconds + " s" + dlq;
    if (dlqUrl == null || dlqSeconds == null) {
      return Horizon.bounded(source, retention, basis);
    }
    Duration dlqRetention = Duration.ofSeconds(Long.parseLong(dlqSeconds.trim()));
    return Horizon.bounded(source, horizonOf(retention, dlqRetention, fifo), basis + ", "
        + (fifo ? "FIFO (the DLQ resets the enqueue time): source + DLQ + source after one redrive"
            : "standard (the DLQ keeps the enqueue time): DLQ + source after one redrive"));
  }

  private Map<QueueAttributeName, String> attributes(String url, String source) {
    try {
      return client.getQueueAttributes(GetQueueAttributesRequest.builder().queueUrl(url)
          .attributeNames(QueueAttributeName.MESSAGE_RETENTION_PERIOD, QueueAttributeName.REDRIVE_POLICY,
              QueueAttributeName.FIFO_QUEUE)
          .build()).attributes();
    } catch (SdkException e) {
      throw new IllegalStateException("could not read the attributes of " + source + ": " + e.getMessage(), e);
    }
  }

  private String dlqUrl(String account, String name, String source) {
    try {
      return client.getQueueUrl(b -> {
        b.queueName(name);
        if (!account.isEmpty()) {
          b.queueOwnerAWSAccountId(account);
        }
      }).queueUrl();
    } catch (SdkException e) {
      throw new IllegalStateException("could not find the dead-letter queue " + name + " of " + source
          + " (its RedrivePolicy): " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "SqsRedeliveryHorizon[" + queueUrl + (redrive ? "" : ", without redrive") + "]";
  }
}
