package io.idem.deadletters;

/**
 * A dead-letter operation that could not be done: a destination that does not exist, a dead letter
 * whose source is gone, a republish the broker did not confirm. The message says what, which dead
 * letter, and the fix; nothing was removed that was not republished first.
 */
public class DeadLetterException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public DeadLetterException(String message) {
    super(message);
  }

  public DeadLetterException(String message, Throwable cause) {
    super(message, cause);
  }
}
