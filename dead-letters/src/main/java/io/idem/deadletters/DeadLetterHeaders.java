package io.idem.deadletters;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The headers Idem writes on dead letters and on replayed copies, and the reading of an Idem
 * reason back from them. Names are Idem's ({@code idem-replay-count}); on JMS each {@code -} is a
 * {@code _} ({@code idem_replay_count}), as the JMS adapter writes every Idem header.
 */
public final class DeadLetterHeaders {

  /**
   * Header on a replayed copy: how many times this message has been replayed from a dead-letter
   * destination, 1 for the first replay: {@value}. The adapters copy a message's headers onto its
   * dead letter, so a replayed message that is dead-lettered again carries it, and the loop guard
   * ({@link ReplayOptions#maxReplays()}) reads it there.
   */
  public static final String REPLAY_COUNT = "idem-replay-count";

  /** Header on a replayed copy: when it was replayed, ISO-8601 (UTC): {@value}. */
  public static final String REPLAYED_AT = "idem-replayed-at";

  /** Kafka dead letters: the original record's topic: {@value}. */
  public static final String ORIGINAL_TOPIC = "idem-original-topic";
  /** Kafka dead letters: the original record's partition: {@value}. */
  public static final String ORIGINAL_PARTITION = "idem-original-partition";
  /** Kafka dead letters: the original record's offset: {@value}. */
  public static final String ORIGINAL_OFFSET = "idem-original-offset";
  /** Kafka dead letters: the original record's timestamp: {@value}. */
  public static final String ORIGINAL_TIMESTAMP = "idem-original-timestamp";
  /** JMS dead letters: the original's {@code JMSMessageID}: {@value}. */
  public static final String ORIGINAL_MESSAGE_ID = "idem-original-message-id";
  /** JMS dead letters: the queue the original was consumed from: {@value}. */
  public static final String ORIGINAL_QUEUE = "idem-original-queue";
  /** SQS dead letters: the original attributes left out of the copy: {@value}. */
  public static final String DROPPED_ATTRIBUTES = "idem-dropped-attributes";

  /**
   * The headers a dead letter has and its original did not — the reason, and where the adapter
   * adds them the original's position — which a replay leaves out, so that the copy is the
   * original again (plus {@link #REPLAY_COUNT} and {@link #REPLAYED_AT}).
   */
  public static final List<String> DEAD_LETTER_ONLY = List.of(
      DeadLetterReason.HEADER_CAUSE, DeadLetterReason.HEADER_DETAIL,
      DeadLetterReason.HEADER_CONSUMER_GROUP, DeadLetterReason.HEADER_KEY,
      DeadLetterReason.HEADER_ATTEMPT, DeadLetterReason.HEADER_EXCEPTION,
      ORIGINAL_TOPIC, ORIGINAL_PARTITION, ORIGINAL_OFFSET, ORIGINAL_TIMESTAMP,
      ORIGINAL_MESSAGE_ID, ORIGINAL_QUEUE, DROPPED_ATTRIBUTES, REPLAY_COUNT, REPLAYED_AT);

  private DeadLetterHeaders() {}

  /**
   * The Idem reason the headers carry, or {@code null} when they carry none — a dead letter the
   * broker made itself (RabbitMQ's own dead-lettering, an SQS redrive, Artemis' {@code
   * max-delivery-attempts}) or one with an unknown cause or no consumer group.
   *
   * @param header the value of an Idem header name, or {@code null} when absent
   */
  public static @Nullable DeadLetterReason reason(Function<String, @Nullable String> header) {
    String cause = header.apply(DeadLetterReason.HEADER_CAUSE);
    String group = header.apply(DeadLetterReason.HEADER_CONSUMER_GROUP);
    if (cause == null || group == null) {
      return null;
    }
    DeadLetterCause parsed;
    try {
      parsed = DeadLetterCause.valueOf(cause.trim());
    } catch (IllegalArgumentException e) {
      return null;
    }
    String detail = header.apply(DeadLetterReason.HEADER_DETAIL);
    return new DeadLetterReason(parsed, detail == null ? "" : detail, group,
        header.apply(DeadLetterReason.HEADER_KEY), parseInt(header.apply(DeadLetterReason.HEADER_ATTEMPT)),
        header.apply(DeadLetterReason.HEADER_EXCEPTION));
  }

  /** The {@link #REPLAY_COUNT} the headers carry; 0 when absent or not a number. */
  public static int replayCount(Function<String, @Nullable String> header) {
    return Math.max(0, parseInt(header.apply(REPLAY_COUNT)));
  }

  /** The JMS property name of an Idem header name: each {@code -} a {@code _}. */
  public static String jmsName(String header) {
    return header.replace('-', '_');
  }

  private static int parseInt(@Nullable String text) {
    if (text == null) {
      return 0;
    }
    try {
      return Integer.parseInt(text.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
