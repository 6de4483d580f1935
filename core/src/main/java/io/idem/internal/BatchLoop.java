package io.idem.internal;

import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.ProcessingOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The message-by-message walk of a batch shared by {@link
 * io.idem.IdempotentConsumer#processBatch(List, List, BatchOrder)}'s default and {@link
 * BatchProcessor}: runs {@code step} for each item in order; with {@link
 * BatchOrder#ORDERED} stops after the first outcome that hands its message back ({@link
 * ProcessingOutcome#isRetry()}) or at the first step that throws (an acknowledgement failure);
 * with {@link BatchOrder#UNORDERED} goes on and rethrows the first failure at the end, later ones
 * suppressed in it. Stateless.
 */
public final class BatchLoop {
  private BatchLoop() {}

  /**
   * @param items the batch, in order
   * @param step settles one item and returns its outcome; a {@link RuntimeException} from it is an
   *     acknowledgement that threw (the listeners were told)
   * @return the outcomes of the started items
   * @throws RuntimeException the first failure of {@code step}, after the walk
   */
  public static <T> BatchResult run(
      List<T> items, BatchOrder order, Function<? super T, ProcessingOutcome> step) {
    List<ProcessingOutcome> outcomes = new ArrayList<>(items.size());
    @Nullable RuntimeException failure = null;
    for (T item : items) {
      ProcessingOutcome outcome;
      try {
        outcome = step.apply(item);
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
        if (order == BatchOrder.ORDERED) {
          break;
        }
        continue;
      }
      outcomes.add(outcome);
      if (order == BatchOrder.ORDERED && outcome.isRetry()) {
        break;
      }
    }
    if (failure != null) {
      throw failure;
    }
    return new BatchResult(outcomes, items.size());
  }
}
