package io.idem.spring;

/**
 * {@code @Idempotent} on an {@code @SqsListener} taking a {@code @Payload} POJO, the key from the
 * JSON body ({@code keyJsonPointer = "/id"}; the message carries no key attribute) ({@link
 * SqsDropInApp}).
 */
class SqsPojoDropInIT extends SqsDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(POJOS, key, json(key, body), false);
  }
}
