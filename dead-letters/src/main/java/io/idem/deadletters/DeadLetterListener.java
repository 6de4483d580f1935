package io.idem.deadletters;

/**
 * Hooks around each step of {@link DeadLetterOperations#replay} and {@link
 * DeadLetterOperations#discard}, on the calling thread, in order (progress output, metrics). A
 * listener that throws stops nothing: it is logged and ignored, except an {@link Error}.
 */
public interface DeadLetterListener {

  /** After the key's dead-letter decision was released ({@code released}: one was there to delete). */
  default void onReleased(DeadLetter deadLetter, boolean released) {}

  /** After the broker stored the republished copy, before the dead letter is removed. */
  default void onRepublished(DeadLetter deadLetter, String target) {}

  /** After the dead letter was removed. */
  default void onRemoved(DeadLetter deadLetter) {}

  /** After each selected dead letter, with what happened to it. */
  default void onResult(ActionResult result) {}
}
