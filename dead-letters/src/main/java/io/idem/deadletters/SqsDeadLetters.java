package io.idem.deadletters;

import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.spi.Utf8;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * An SQS dead-letter queue, as {@code idem-sqs} fills it (the configured one, or the target of
 * the source queue's {@code RedrivePolicy}).
 *
 * <ul>
 *   <li>{@link #browse} receives the dead letters with a visibility timeout of {@link
 *       Builder#holdFor(Duration)} (so that none is received twice while the tool reads) and makes
 *       them visible again at once when done ({@code ChangeMessageVisibility} 0). A receive counts
 *       in {@code ApproximateReceiveCount}, which SQS acts on only through a {@code RedrivePolicy}
 *       of the queue itself: a dead-letter queue that has one is refused, as reading it could make
 *       SQS move its messages.
 *   <li>A replay sends the copy to the source queue ({@code SendMessage}; on a FIFO queue with
 *       the dead letter's {@code MessageGroupId} and, as deduplication id, the dead letter's own
 *       {@code MessageId}: a copy sent twice within SQS' five minutes is dropped), and only once SQS
 *       answered is the dead letter deleted ({@code DeleteMessage}).
 *   <li>The source queue is not on the dead letter: {@link Builder#sourceQueue(String)}, or
 *       else the one queue whose {@code RedrivePolicy} names this one ({@code
 *       ListDeadLetterSourceQueues}).
 * </ul>
 *
 * <p>SQS's own {@code StartMessageMoveTask} is not used: it moves every message unchanged, so it
 * can neither take a selection, nor release each key's decision first, nor add the replay count
 * the loop guard reads. A dead letter a crashed tool still held comes back after {@code holdFor}.
 * Not thread-safe; the client is the caller's to close. Needs the AWS SDK's {@code sqs}.
 */
public final class SqsDeadLetters implements DeadLetterDestination {

  /** Default {@link Builder#holdFor(Duration)}: 5 minutes. */
  public static final Duration DEFAULT_HOLD = Duration.ofMinutes(5);

  private final SqsClient sqs;
  private final String queueUrl;
  private final @Nullable String sourceName;
  private final @Nullable String targetName;
  private final Duration hold;
  private final Set<String> existing = new HashSet<>();
  private @Nullable String resolvedSource;
  private boolean checked;

  private SqsDeadLetters(Builder b) {
    this.sqs = b.sqs;
    this.queueUrl = b.queueUrl;
    this.sourceName = b.sourceName;
    this.targetName = b.targetName;
    this.hold = b.hold;
  }

  /** The dead-letter queue at {@code deadLetterQueueUrl}, through {@code client}. */
  public static Builder builder(SqsClient client, String deadLetterQueueUrl) {
    return new Builder(client, deadLetterQueueUrl);
  }

  @Override
  public String broker() {
    return "sqs";
  }

  @Override
  public String name() {
    return queueUrl;
  }

  @Override
  public List<DeadLetter> browse(int max) {
    List<DeadLetter> out = new ArrayList<>();
    scan(max, (m, d) -> out.add(d), false);
    return out;
  }

  @Override
  public void process(int max, Work work) {
    scan(max, (m, d) -> {
      Held held = new Held() {
        @Override
        public DeadLetter deadLetter() {
          return d;
        }

        @Override
        public void republish(String to, Map<String, String> headers) {
          send(m, d, to, headers);
        }

        @Override
        public void remove() {
          try {
            sqs.deleteMessage(r -> r.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
          } catch (SdkException e) {
            throw new DeadLetterException("could not delete dead letter " + d.id() + " (it stays): " + e.getMessage(), e);
          }
          removed.add(m.messageId());
        }
      };
      try {
        work.accept(held);
      } catch (Exception e) {
        // the caller reports it; the dead letter stays
      }
    }, true);
  }

  private final Set<String> removed = new HashSet<>();

  @FunctionalInterface
  private interface Visit {
    void accept(Message message, DeadLetter deadLetter);
  }

  /**
   * Receives up to {@code max} dead letters first, all of them (so the dead letters a replay makes
   * meanwhile are not among them), then visits each, keeping the ones not yet visited hidden.
   */
  private void scan(int max, Visit visit, boolean processing) {
    check();
    removed.clear();
    List<Message> held = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    try {
      long hiddenSince = System.nanoTime();
      while (held.size() < max) {
        int want = Math.min(10, max - held.size());
        ReceiveMessageResponse response;
        try {
          response = sqs.receiveMessage(r -> r.queueUrl(queueUrl).maxNumberOfMessages(want).waitTimeSeconds(1)
              .visibilityTimeout((int) hold.toSeconds()).messageAttributeNames("All")
              .messageSystemAttributeNames(MessageSystemAttributeName.ALL));
        } catch (SdkException e) {
          throw new DeadLetterException("could not receive from dead-letter queue " + queueUrl + ": " + e.getMessage(), e);
        }
        if (response.messages().isEmpty()) {
          break;
        }
        for (Message m : response.messages()) {
          if (seen.add(m.messageId())) {
            held.add(m);
          }
        }
      }
      for (int i = 0; i < held.size(); i++) {
        if (System.nanoTime() - hiddenSince > hold.toNanos() / 2) {
          hide(held.subList(i, held.size()));
          hiddenSince = System.nanoTime();
        }
        visit.accept(held.get(i), deadLetter(held.get(i)));
      }
    } finally {
      release(held, processing);
    }
  }

  /** Keeps {@code messages} hidden for another {@code holdFor}. */
  private void hide(List<Message> messages) {
    for (int i = 0; i < messages.size(); i += 10) {
      List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
      for (Message m : messages.subList(i, Math.min(messages.size(), i + 10))) {
        entries.add(ChangeMessageVisibilityBatchRequestEntry.builder().id(Integer.toString(entries.size()))
            .receiptHandle(m.receiptHandle()).visibilityTimeout((int) hold.toSeconds()).build());
      }
      try {
        sqs.changeMessageVisibilityBatch(r -> r.queueUrl(queueUrl).entries(entries));
      } catch (SdkException e) {
        throw new DeadLetterException("could not keep the dead letters of " + queueUrl + " hidden: " + e.getMessage(), e);
      }
    }
  }

  /** Makes what was received and not deleted visible again at once. */
  private void release(List<Message> held, boolean processing) {
    List<Message> back = held.stream().filter(m -> !processing || !removed.contains(m.messageId())).toList();
    for (int i = 0; i < back.size(); i += 10) {
      List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
      for (Message m : back.subList(i, Math.min(back.size(), i + 10))) {
        entries.add(ChangeMessageVisibilityBatchRequestEntry.builder().id(Integer.toString(entries.size()))
            .receiptHandle(m.receiptHandle()).visibilityTimeout(0).build());
      }
      try {
        sqs.changeMessageVisibilityBatch(r -> r.queueUrl(queueUrl).entries(entries));
      } catch (SdkException e) {
        // they come back by themselves after holdFor
      }
    }
  }

  private void send(Message m, DeadLetter d, String to, Map<String, String> added) {
    Map<String, MessageAttributeValue> attributes = new LinkedHashMap<>();
    m.messageAttributes().forEach((name, value) -> {
      if (!DeadLetterHeaders.DEAD_LETTER_ONLY.contains(name)) {
        attributes.put(name, value);
      }
    });
    added.forEach((name, value) -> attributes.put(name,
        MessageAttributeValue.builder().dataType("String").stringValue(value).build()));
    SendMessageRequest.Builder copy = SendMessageRequest.builder().queueUrl(to).messageBody(m.body())
        .messageAttributes(attributes);
    if (to.endsWith(".fifo")) {
      String group = m.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID);
      copy.messageGroupId(group == null ? "idem-replays" : group).messageDeduplicationId(m.messageId());
    }
    try {
      sqs.sendMessage(copy.build());
    } catch (QueueDoesNotExistException e) {
      throw new DeadLetterException("queue " + to + " to replay " + d.id() + " to does not exist (deleted?): nothing"
          + " republished, the dead letter stays", e);
    } catch (SdkException e) {
      throw new DeadLetterException("SQS did not take the copy of " + d.id() + " on " + to + ": " + e.getMessage()
          + " (it may still be stored: replaying again is a duplicate)", e);
    }
  }

  @Override
  public String target(DeadLetter deadLetter) {
    String to = targetName != null ? url(targetName, deadLetter) : source();
    if (to == null) {
      throw new DeadLetterException("the source queue of dead-letter queue " + queueUrl + " is unknown: no queue, or more"
          + " than one, names it in its RedrivePolicy (ListDeadLetterSourceQueues); give it (--source)");
    }
    if (!existing.contains(to)) {
      try {
        sqs.getQueueAttributes(r -> r.queueUrl(to).attributeNames(QueueAttributeName.QUEUE_ARN));
      } catch (QueueDoesNotExistException e) {
        throw gone(to, deadLetter, e);
      } catch (SdkException e) {
        throw new DeadLetterException("could not check queue " + to + ": " + e.getMessage(), e);
      }
      existing.add(to);
    }
    return to;
  }

  private static DeadLetterException gone(String queue, DeadLetter deadLetter, Exception e) {
    return new DeadLetterException("the queue " + queue + " to replay dead letter " + deadLetter.id() + " to does not"
        + " exist (deleted?): nothing republished, the dead letter stays", e);
  }

  /** The URL of a queue given by name or URL. */
  private String url(String nameOrUrl, DeadLetter deadLetter) {
    if (nameOrUrl.startsWith("http://") || nameOrUrl.startsWith("https://")) {
      return nameOrUrl;
    }
    try {
      return sqs.getQueueUrl(r -> r.queueName(nameOrUrl)).queueUrl();
    } catch (QueueDoesNotExistException e) {
      throw gone(nameOrUrl, deadLetter, e);
    } catch (SdkException e) {
      throw new DeadLetterException("could not look up queue " + nameOrUrl + ": " + e.getMessage(), e);
    }
  }

  /** The source queue's URL: given, or the one queue redriving into this one; {@code null} if unknown. */
  private @Nullable String source() {
    if (resolvedSource == null) {
      if (sourceName != null) {
        resolvedSource = sourceName.startsWith("http") ? sourceName : null;
        if (resolvedSource == null) {
          try {
            resolvedSource = sqs.getQueueUrl(r -> r.queueName(sourceName)).queueUrl();
          } catch (QueueDoesNotExistException e) {
            throw new DeadLetterException("the source queue " + sourceName + " of dead-letter queue " + queueUrl
                + " does not exist (deleted?): nothing republished, the dead letters stay", e);
          }
        }
        return resolvedSource;
      }
      try {
        List<String> sources = sqs.listDeadLetterSourceQueues(r -> r.queueUrl(queueUrl)).queueUrls();
        resolvedSource = sources.size() == 1 ? sources.get(0) : null;
      } catch (SdkException e) {
        resolvedSource = null;
      }
    }
    return resolvedSource;
  }

  /** The source queue's name for a dead letter, without asking SQS when it was given. */
  private @Nullable String sourceName() {
    if (sourceName != null) {
      return queueName(sourceName);
    }
    try {
      String src = source();
      return src == null ? null : queueName(src);
    } catch (DeadLetterException e) {
      return null;
    }
  }

  private void check() {
    if (checked) {
      return;
    }
    Map<String, String> attributes;
    try {
      attributes = sqs.getQueueAttributes(r -> r.queueUrl(queueUrl).attributeNames(QueueAttributeName.ALL))
          .attributesAsStrings();
    } catch (QueueDoesNotExistException e) {
      throw new DeadLetterException("dead-letter queue " + queueUrl + " does not exist", e);
    } catch (SdkException e) {
      throw new DeadLetterException("could not read dead-letter queue " + queueUrl + ": " + e.getMessage(), e);
    }
    String redrive = attributes.get(QueueAttributeName.REDRIVE_POLICY.toString());
    if (redrive != null && !redrive.isBlank()) {
      throw new DeadLetterException("dead-letter queue " + queueUrl + " has a RedrivePolicy of its own (" + redrive
          + "): every read counts as a receive and SQS would move its messages on; remove the policy from the"
          + " dead-letter queue first");
    }
    checked = true;
  }

  private DeadLetter deadLetter(Message m) {
    Map<String, String> headers = new LinkedHashMap<>();
    m.messageAttributes().forEach((name, value) -> {
      String text = value.stringValue() != null ? value.stringValue()
          : value.binaryValue() != null ? Utf8.decodeStrict(value.binaryValue().asByteArray()) : null;
      if (text != null) {
        headers.put(name, text);
      }
    });
    String sent = m.attributes().get(MessageSystemAttributeName.SENT_TIMESTAMP);
    Instant at = null;
    if (sent != null) {
      try {
        at = Instant.ofEpochMilli(Long.parseLong(sent));
      } catch (NumberFormatException ignored) {
        // unknown time
      }
    }
    return new DeadLetter(m.messageId(), "sqs", queueUrl, sourceName(), headers,
        m.body().getBytes(java.nio.charset.StandardCharsets.UTF_8), null, at,
        DeadLetterHeaders.reason(headers::get), DeadLetterHeaders.replayCount(headers::get));
  }

  private static String queueName(String url) {
    return url.substring(url.lastIndexOf('/') + 1);
  }

  @Override
  public void close() {
    // the client is the caller's
  }

  /** Builder of {@link SqsDeadLetters}. Not thread-safe. */
  public static final class Builder {
    private final SqsClient sqs;
    private final String queueUrl;
    private @Nullable String sourceName;
    private @Nullable String targetName;
    private Duration hold = DEFAULT_HOLD;

    private Builder(SqsClient sqs, String queueUrl) {
      this.sqs = Objects.requireNonNull(sqs, "client");
      this.queueUrl = Objects.requireNonNull(queueUrl, "deadLetterQueueUrl");
    }

    /**
     * The source queue, by URL or name (looked up when first needed); default: the one queue whose
     * RedrivePolicy targets this one.
     */
    public Builder sourceQueue(@Nullable String value) {
      this.sourceName = value;
      return this;
    }

    /** Replays to this queue (URL or name) instead of the source queue. */
    public Builder target(@Nullable String value) {
      this.targetName = value;
      return this;
    }

    /** How long the tool holds received dead letters hidden, 1 s to 12 h; default 5 minutes. */
    public Builder holdFor(Duration value) {
      if (value == null || value.toSeconds() < 1 || value.toSeconds() > 43_200) {
        throw new IllegalArgumentException("holdFor must be between 1 s and 12 h (SQS' visibility timeout), but was "
            + value);
      }
      this.hold = value;
      return this;
    }

    public SqsDeadLetters build() {
      return new SqsDeadLetters(this);
    }
  }
}
