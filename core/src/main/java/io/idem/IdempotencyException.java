package io.idem;

import org.jspecify.annotations.Nullable;

/**
 * Root of every exception Idem throws. Unchecked; the cause is always kept.
 *
 * <p>Outcomes are not exceptions: a duplicate delivery is {@link ProcessingOutcome#DUPLICATE}.
 */
public class IdempotencyException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public IdempotencyException(String message) {
    super(message);
  }

  public IdempotencyException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
