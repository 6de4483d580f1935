package io.idem.sqs;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyException;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * Where dead-lettered messages go: an explicit dead-letter queue (copy with reason attributes,
 * then delete), or back to the queue (visibility 0) for its {@code RedrivePolicy} to move.
 */
abstract class DeadLetters {
  private static final Logger LOG = LoggerFactory.getLogger(SqsIdempotentConsumer.class);

  /** Moves {@code delivery} out of the queue, or throws leaving it there. */
  abstract void deadLetter(Delivery delivery, DeadLetterReason reason);

  /** True when this mode leaves the moving to the queue's {@code RedrivePolicy}. */
  abstract boolean viaRedrivePolicy();

  static DeadLetters explicit(SqsClient sqs, String dlqUrl, boolean fifo, DeleteBatcher deletes) {
    return new Explicit(sqs, dlqUrl, fifo, deletes);
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

    Explicit(SqsClient sqs, String dlqUrl, boolean fifo, DeleteBatcher deletes) {
      this.sqs = sqs;
      this.dlqUrl = dlqUrl;
      this.fifo = fifo;
      this.deletes = deletes;
    }

    @Override
    void deadLetter(Delivery delivery, DeadLetterReason reason) {
      Message original = delivery.message.unwrap(Message.class).orElseThrow();
      Map<String, MessageAttributeValue> attributes =
          DeadLetterAttributes.of(original.messageAttributes(), reason, original.body());
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
        throw new IdempotencyException("could not send " + delivery + " to the dead-letter queue "
            + dlqUrl + " (" + reason.cause() + "): " + e.getMessage() + "; it stays in the queue", e);
      }
      if (attributes.containsKey(DeadLetterAttributes.DROPPED_ATTRIBUTE)) {
        LOG.warn("dead-letter copy of {} left out attributes {} (SQS allows {} per message)", delivery,
            attributes.get(DeadLetterAttributes.DROPPED_ATTRIBUTE).stringValue(), DeadLetterAttributes.MAX_ATTRIBUTES);
      }
      deletes.delete(delivery);
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
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("\"maxReceiveCount\"\\s*:\\s*\"?(\\d+)").matcher(redrivePolicy);
    return m.find() ? Integer.valueOf(m.group(1)) : null;
  }
}
