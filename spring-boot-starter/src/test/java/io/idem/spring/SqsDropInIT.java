package io.idem.spring;

/**
 * {@code @Idempotent} on an {@code @SqsListener} taking a Spring {@code Message} ({@link
 * SqsDropInApp}): the drop-in contract, under a container error handler that would have the
 * container delete every failed message.
 */
class SqsDropInIT extends SqsDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(MESSAGES, key, body, true);
  }
}
