package io.idem.spring;

/**
 * {@code @Idempotent} on a {@code @JmsListener} taking {@code @Payload String} and {@code
 * MessageHeaders} ({@link JmsDropInApp}): the drop-in contract as for the native form.
 */
class JmsTextDropInIT extends JmsDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(TEXTS, key, body);
  }
}
