package io.idem;

import org.jspecify.annotations.Nullable;

/**
 * Thrown by a {@link MessageHandler} when retrying cannot help (for example a payload that fails
 * validation): the transaction is rolled back and the message is dead-lettered at once with the
 * exception's message as the reason, whatever attempt it is on.
 *
 * <p>Other exception types can be declared non-retryable with
 * {@link RetryPolicy.Builder#nonRetryable(Class)}.
 */
public class NonRetryableException extends IdempotencyException {
  private static final long serialVersionUID = 1L;

  public NonRetryableException(String message) {
    super(message);
  }

  public NonRetryableException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
