package io.idem.internal;

import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Fans out to listeners; an exception from one is logged and never changes the outcome. */
final class Listeners implements IdempotencyListener {
  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);
  private final List<IdempotencyListener> listeners;

  Listeners(List<IdempotencyListener> listeners) {
    this.listeners = listeners;
  }

  private void each(String hook, Consumer<IdempotencyListener> call) {
    for (IdempotencyListener listener : listeners) {
      try {
        call.accept(listener);
      } catch (RuntimeException e) {
        LOG.warn("listener {} failed in {}; ignored", listener, hook, e);
      }
    }
  }

  @Override
  public void onKey(InboundMessage message, IdempotencyKey key) {
    each("onKey", l -> l.onKey(message, key));
  }

  @Override
  public void beforeClaim(InboundMessage message, IdempotencyKey key) {
    each("beforeClaim", l -> l.beforeClaim(message, key));
  }

  @Override
  public void afterHandler(InboundMessage message, IdempotencyKey key) {
    each("afterHandler", l -> l.afterHandler(message, key));
  }

  @Override
  public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
    each("afterCommit", l -> l.afterCommit(message, key, pending));
  }

  @Override
  public void onRetry(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome kind,
      Throwable failure,
      Duration delay) {
    each("onRetry", l -> l.onRetry(message, key, kind, failure, delay));
  }

  @Override
  public void onDeadLetter(InboundMessage message, DeadLetterReason reason) {
    each("onDeadLetter", l -> l.onDeadLetter(message, reason));
  }

  @Override
  public void onOutcome(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome outcome,
      Duration elapsed) {
    each("onOutcome", l -> l.onOutcome(message, key, outcome, elapsed));
  }

  @Override
  public void onAcknowledgementFailure(
      InboundMessage message,
      @Nullable IdempotencyKey key,
      ProcessingOutcome intended,
      RuntimeException failure,
      Duration elapsed) {
    each("onAcknowledgementFailure",
        l -> l.onAcknowledgementFailure(message, key, intended, failure, elapsed));
  }
}
