package io.idem.spring;

/** {@code @Idempotent} on a {@code @JmsListener} taking a {@code jakarta.jms.Message} ({@link JmsDropInApp}). */
class JmsDropInIT extends JmsDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(MESSAGES, key, body);
  }
}
