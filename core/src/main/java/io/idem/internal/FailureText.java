package io.idem.internal;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/** Short, one-line text for a failure, for logs and dead-letter reasons. Stateless. */
final class FailureText {
  private FailureText() {}

  /** The failure, and its innermost cause when that is another exception (first lines only). */
  static String describe(Throwable failure) {
    Throwable root = rootCause(failure);
    String text = firstLine(failure.toString());
    return root == failure ? text : text + " (root cause: " + firstLine(root.toString()) + ")";
  }

  /** The failure and its innermost cause, on one line (MyBatis wraps SQL errors in multi-line text). */
  static String oneLine(Throwable e) {
    Throwable root = rootCause(e);
    String text = root == e
        ? e.toString()
        : e.getClass().getSimpleName() + " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
    return firstLine(text);
  }

  private static Throwable rootCause(Throwable failure) {
    Throwable root = failure;
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    while (root.getCause() != null && seen.add(root)) {
      root = root.getCause();
    }
    return root;
  }

  private static String firstLine(String text) {
    int end = text.indexOf('\n');
    return end < 0 ? text : text.substring(0, end);
  }
}
