package io.idem.spring;

/**
 * {@code @Idempotent} on a {@code @KafkaListener} written as Spring users write one: a {@code
 * @Payload} POJO converted from JSON by Spring's message converter and a {@code @Header}, the key
 * from the POJO through {@code key = "#payment.id"} (the record carries no key header). The
 * drop-in contract holds as for the {@code ConsumerRecord} form ({@link KafkaDropInApp}).
 */
class KafkaPojoDropInIT extends KafkaDropInApp implements DropInListenerContract {

  @Override
  public void send(String key, String body) {
    send(POJOS, key, json(key, body), false);
  }
}
