package io.idem.internal;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/** Tries extractors in order; the first Found or Rejected decides. */
public final class ChainedKeyExtractor implements IdempotencyKeyExtractor {
  private final List<IdempotencyKeyExtractor> extractors;

  public ChainedKeyExtractor(List<IdempotencyKeyExtractor> extractors) {
    if (extractors.isEmpty()) {
      throw new IllegalArgumentException("firstOf needs at least one extractor, but got none");
    }
    // a nested chain (defaults().orElse(...)) joins this one: the same order, one list of what
    // was tried, and one "no idempotency key" in the reason
    List<IdempotencyKeyExtractor> flat = new ArrayList<>();
    for (IdempotencyKeyExtractor extractor : extractors) {
      if (extractor instanceof ChainedKeyExtractor chain) {
        flat.addAll(chain.extractors);
      } else {
        flat.add(extractor);
      }
    }
    this.extractors = List.copyOf(flat);
  }

  @Override
  public KeyExtraction extract(InboundMessage message) {
    StringJoiner tried = new StringJoiner("; ");
    for (IdempotencyKeyExtractor extractor : extractors) {
      KeyExtraction result = extractSafely(extractor, message);
      if (result instanceof KeyExtraction.Absent absent) {
        tried.add(absent.detail());
      } else {
        return result;
      }
    }
    return KeyExtraction.absent("no idempotency key: " + tried);
  }

  /**
   * Runs one extractor, turning the contract breaches its Javadoc forbids (throwing, returning
   * {@code null}) into a {@link KeyExtraction.Rejected} naming it, so the message is dead-lettered
   * with a reason instead of failing {@code process}.
   */
  static KeyExtraction extractSafely(IdempotencyKeyExtractor extractor, InboundMessage message) {
    KeyExtraction result;
    try {
      result = extractor.extract(message);
    } catch (RuntimeException e) {
      return KeyExtraction.rejected("key extractor " + extractor + " failed: " + e);
    }
    if (result == null) {
      return KeyExtraction.rejected("key extractor " + extractor + " returned null");
    }
    return result;
  }

  @Override
  public String toString() {
    return "firstOf" + extractors;
  }
}
