package io.idem.testkit;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/**
 * Listener that records every settled delivery, for assertions. Thread-safe.
 */
public final class OutcomeRecorder implements IdempotencyListener {

  /** One settled delivery. */
  public record Settled(@Nullable String key, ProcessingOutcome outcome, int attempt) {}

  private final List<Settled> settled = new CopyOnWriteArrayList<>();
  private final List<DeadLetterReason> deadLetters = new CopyOnWriteArrayList<>();

  @Override
  public void onOutcome(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome outcome,
      Duration elapsed) {
    settled.add(new Settled(key == null ? null : key.value(), outcome, message.deliveryAttempt()));
  }

  @Override
  public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
    deadLetters.add(reason);
  }

  /** Every settled delivery so far, in order. */
  public List<Settled> settled() {
    return new ArrayList<>(settled);
  }

  /** How many settled deliveries had {@code outcome}. */
  public long count(ProcessingOutcome outcome) {
    return settled.stream().filter(s -> s.outcome() == outcome).count();
  }

  /** How many settled deliveries of {@code key} had {@code outcome}. */
  public long count(String key, ProcessingOutcome outcome) {
    return settled.stream().filter(s -> key.equals(s.key()) && s.outcome() == outcome).count();
  }

  /** Reasons given to dead-lettered messages, in order. */
  public List<DeadLetterReason> deadLetters() {
    return new ArrayList<>(deadLetters);
  }
}
