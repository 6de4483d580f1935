package io.idem;

import java.util.List;
import java.util.Objects;

/**
 * What {@link IdempotentConsumer#processBatch(List, List, BatchOrder)} did with a batch: the
 * outcomes of the messages it started, a prefix of the batch in receive order, and so where it
 * stopped. Every started message was settled or handed back through its own acknowledgement,
 * exactly once, as {@link IdempotentConsumer#process} does. The messages from {@link #stoppedAt()}
 * on were not started — no listener heard of them, their acknowledgement was not called, nothing
 * of theirs was committed — and the adapter hands them back to the broker itself, without counting
 * an attempt (only {@link BatchOrder#ORDERED} stops early). Immutable.
 *
 * @param outcomes the outcome of message {@code i} at index {@code i}, for {@code i <
 *     stoppedAt()}; unmodifiable
 * @param batchSize the number of messages in the batch
 */
public record BatchResult(List<ProcessingOutcome> outcomes, int batchSize) {
  public BatchResult {
    outcomes = List.copyOf(Objects.requireNonNull(outcomes, "outcomes"));
    if (batchSize < outcomes.size()) {
      throw new IllegalArgumentException("batchSize must be at least the number of outcomes ("
          + outcomes.size() + "), but was " + batchSize);
    }
  }

  /** Index of the first message not started; {@link #batchSize()} when every one was. */
  public int stoppedAt() {
    return outcomes.size();
  }

  /** True when every message of the batch was started (and so settled or handed back). */
  public boolean isComplete() {
    return outcomes.size() == batchSize;
  }

  /** The messages of {@code batch} that were not started, in order (the adapter hands them back). */
  public <T> List<T> notStarted(List<T> batch) {
    if (batch.size() != batchSize) {
      throw new IllegalArgumentException(
          "batch must have " + batchSize + " elements, but had " + batch.size());
    }
    return batch.subList(stoppedAt(), batchSize);
  }
}
