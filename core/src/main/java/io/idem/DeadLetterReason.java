package io.idem;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Why a message is being dead-lettered, in a form every adapter can attach to the dead-lettered
 * copy as headers ({@link #toHeaders()}).
 *
 * @param cause machine-readable cause
 * @param detail human-readable explanation, such as the extractor's reason or the exception text
 * @param consumerGroup the consumer group that gave up on the message
 * @param key the idempotency key, or {@code null} when none could be extracted
 * @param attempt the delivery attempt that was dead-lettered (1-based)
 * @param exceptionClass the handler exception's class name, or {@code null}
 */
public record DeadLetterReason(
    DeadLetterCause cause,
    String detail,
    String consumerGroup,
    @Nullable String key,
    int attempt,
    @Nullable String exceptionClass) {

  /** Header carrying {@link #cause()}: {@value}. */
  public static final String HEADER_CAUSE = "idem-dead-letter-cause";
  /** Header carrying {@link #detail()} (cut to {@value #MAX_DETAIL_LENGTH} characters): {@value}. */
  public static final String HEADER_DETAIL = "idem-dead-letter-detail";
  /** Header carrying {@link #consumerGroup()}: {@value}. */
  public static final String HEADER_CONSUMER_GROUP = "idem-consumer-group";
  /** Header carrying {@link #key()}, when known: {@value}. */
  public static final String HEADER_KEY = "idem-idempotency-key";
  /** Header carrying {@link #attempt()}: {@value}. */
  public static final String HEADER_ATTEMPT = "idem-attempt";
  /** Header carrying {@link #exceptionClass()}, when known: {@value}. */
  public static final String HEADER_EXCEPTION = "idem-exception-class";

  /** Longest detail written to a header, in characters; longer details are cut with "…". */
  public static final int MAX_DETAIL_LENGTH = 1000;

  public DeadLetterReason {
    Objects.requireNonNull(cause, "cause");
    Objects.requireNonNull(detail, "detail");
    Objects.requireNonNull(consumerGroup, "consumerGroup");
  }

  /**
   * The reason as message headers, ready for the dead-lettered copy: insertion-ordered, every value
   * UTF-8 text, absent values left out.
   */
  public Map<String, String> toHeaders() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put(HEADER_CAUSE, cause.name());
    headers.put(
        HEADER_DETAIL,
        detail.length() <= MAX_DETAIL_LENGTH ? detail : cut(detail, MAX_DETAIL_LENGTH) + "…");
    headers.put(HEADER_CONSUMER_GROUP, consumerGroup);
    if (key != null) {
      headers.put(HEADER_KEY, key);
    }
    headers.put(HEADER_ATTEMPT, Integer.toString(attempt));
    if (exceptionClass != null) {
      headers.put(HEADER_EXCEPTION, exceptionClass);
    }
    return headers;
  }

  /** {@code CAUSE: detail}, for logs. */
  @Override
  public String toString() {
    return cause + ": " + detail;
  }

  /** The first {@code max} chars of {@code text}, one fewer when that would split a surrogate pair. */
  static String cut(String text, int max) {
    int end = Character.isHighSurrogate(text.charAt(max - 1)) ? max - 1 : max;
    return text.substring(0, end);
  }
}
