package io.idem.sqs;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * Where dead-lettered messages go: a dead-letter queue (copy with reason attributes, then delete)
 * — the configured one, or else the target of the queue's {@code RedrivePolicy} — or, when that
 * target cannot be resolved, back to the queue (visibility 0) for its {@code RedrivePolicy} to
 * move unchanged.
 */
abstract class DeadLetters {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);

  /** Moves {@code delivery} out of the queue, or throws leaving it there. */
  abstract void deadLetter(Delivery delivery, DeadLetterReason reason);

  /** True when this mode leaves the moving to the queue's {@code RedrivePolicy}. */
  abstract boolean viaRedrivePolicy();

  /**
   * @param maxMessageBytes the dead-letter queue's {@code MaximumMessageSize}: body plus
   *     attributes of the copy must fit
   */
  static DeadLetters explicit(SqsClient sqs, String dlqUrl, boolean fifo, DeleteBatcher deletes, int maxMessageBytes) {
    return new Explicit(sqs, dlqUrl, fifo, deletes, maxMessageBytes);
  }

  /**
   * A dead-letter copy SQS refused (or that does not fit): the message stays in the queue.
   * {@link #firstForMessage()} tells whether this is the first refusal for that message in this
   * consumer (reported at ERROR; repeats at WARN), so a copy that can never be sent is not an
   * ERROR on every retry.
   */
  static final class CopyRefused extends IdempotencyException {
    private static final long serialVersionUID = 1L;
    private final boolean firstForMessage;

    CopyRefused(String message, @Nullable Throwable cause, boolean firstForMessage) {
      super(message, cause);
      this.firstForMessage = firstForMessage;
    }

    boolean firstForMessage() {
      return firstForMessage;
    }
  }

  static DeadLetters redrivePolicy(VisibilityKeeper keeper, String queueUrl) {
    return new Redrive(keeper, queueUrl);
  }

  /** Copy to the dead-letter queue (confirmed by SQS), then delete the original. */
  private static final class Explicit extends DeadLetters {
    private final SqsClient sqs;
    private final String dlqUrl;
    private final boolean fifo;
    private final DeleteBatcher deletes;
    private final int maxMessageBytes;
    /** Ids of messages whose copy was refused once already (reported at ERROR that time). */
    private final Set<String> refused = RecentIds.set();

    Explicit(SqsClient sqs, String dlqUrl, boolean fifo, DeleteBatcher deletes, int maxMessageBytes) {
      this.sqs = sqs;
      this.dlqUrl = dlqUrl;
      this.fifo = fifo;
      this.deletes = deletes;
      this.maxMessageBytes = maxMessageBytes;
    }

    @Override
    void deadLetter(Delivery delivery, DeadLetterReason reason) {
      Message original = delivery.message.unwrap(Message.class).orElseThrow();
      Map<String, MessageAttributeValue> attributes;
      try {
        attributes = DeadLetterAttributes.of(original.messageAttributes(), reason, original.body(), maxMessageBytes);
      } catch (IdempotencyException e) {
        throw refused(delivery, e.getMessage() + " of dead-letter queue " + dlqUrl, e);
      }
      SendMessageRequest.Builder copy = SendMessageRequest.builder()
          .queueUrl(dlqUrl)
          .messageBody(original.body())
          .messageAttributes(attributes);
      if (fifo) {
        String group = delivery.message.messageGroupId();
        // the original MessageId as deduplication id: a copy sent again after a crash (before the
        // original's delete) is dropped by SQS within its 5-minute deduplication window
        copy.messageGroupId(group == null ? "idem-dead-letters" : group)
            .messageDeduplicationId(original.messageId());
      }
      try {
        sqs.sendMessage(copy.build());
      } catch (SdkException e) {
        throw refused(delivery, "could not send " + delivery + " to the dead-letter queue " + dlqUrl + " ("
            + reason.cause() + "): " + e.getMessage() + "; it stays in the queue and is tried again after"
            + " the retry backoff", e);
      }
      refused.remove(delivery.messageId());
      if (attributes.containsKey(DeadLetterAttributes.DROPPED_ATTRIBUTE)) {
        LOG.warn("dead-letter copy of {} left out attributes {} (SQS allows {} per message)", delivery,
            attributes.get(DeadLetterAttributes.DROPPED_ATTRIBUTE).stringValue(), DeadLetterAttributes.MAX_ATTRIBUTES);
      }
      deletes.delete(delivery);
    }

    private CopyRefused refused(Delivery delivery, String why, Throwable cause) {
      return new CopyRefused(why, cause, refused.add(delivery.messageId()));
    }

    @Override
    boolean viaRedrivePolicy() {
      return false;
    }
  }

  /**
   * Makes the message visible at once so that SQS moves it to the queue's dead-letter target once
   * its receive count passes {@code maxReceiveCount}. SQS moves messages unchanged, so the reason
   * is only logged.
   */
  private static final class Redrive extends DeadLetters {
    private final VisibilityKeeper keeper;
    private final String queueUrl;

    Redrive(VisibilityKeeper keeper, String queueUrl) {
      this.keeper = keeper;
      this.queueUrl = queueUrl;
    }

    @Override
    void deadLetter(Delivery delivery, DeadLetterReason reason) {
      LOG.warn("{} on {} given up ({}); handed back for the queue's RedrivePolicy to move it"
          + " (SQS moves it unchanged: the reason is only in this log)", delivery, queueUrl, reason);
      keeper.changeVisibility(delivery, Duration.ZERO);
    }

    @Override
    boolean viaRedrivePolicy() {
      return true;
    }
  }

  static @Nullable Integer maxReceiveCount(@Nullable String redrivePolicy) {
    if (redrivePolicy == null) {
      return null;
    }
    Matcher m = Pattern.compile("\"maxReceiveCount\"\\s*:\\s*\"?(\\d+)").matcher(redrivePolicy);
    return m.find() ? Integer.valueOf(m.group(1)) : null;
  }

  /** The {@code deadLetterTargetArn} of a {@code RedrivePolicy}, or {@code null}. */
  static @Nullable String deadLetterTargetArn(@Nullable String redrivePolicy) {
    if (redrivePolicy == null) {
      return null;
    }
    Matcher m = Pattern.compile("\"deadLetterTargetArn\"\\s*:\\s*\"([^\"]+)\"").matcher(redrivePolicy);
    return m.find() ? m.group(1) : null;
  }

  /**
   * The URL of the queue an ARN ({@code arn:aws:sqs:region:account:name}) names, by
   * {@code GetQueueUrl} with its name and owner account; {@code null} (logged) when it cannot be
   * resolved — a foreign account without permission, say.
   */
  static @Nullable String queueUrlOf(SqsClient sqs, String arn) {
    String[] parts = arn.split(":", 6);
    if (parts.length != 6 || !parts[2].equals("sqs")) {
      LOG.warn("cannot read the RedrivePolicy's deadLetterTargetArn '{}': not an SQS queue ARN", arn);
      return null;
    }
    try {
      return sqs.getQueueUrl(b -> b.queueName(parts[5]).queueOwnerAWSAccountId(parts[4])).queueUrl();
    } catch (SdkException e) {
      LOG.warn("cannot resolve the RedrivePolicy's dead-letter queue {}: {}", arn, e.toString());
      return null;
    }
  }
}
