package io.idem.spring;

/**
 * Issue 24, case 1 where the backoff does not fit in the call: the listener's container has
 * {@code max.poll.interval.ms=1000} and {@code max.poll.records=100}, a budget of 10 ms per record
 * ({@link KafkaBudget}), so every retry is handed back to the container — Idem's error handler
 * seeks the record back and pauses its partition for the backoff, without Spring's {@code
 * DefaultErrorHandler} counting it — and the attempts, the dead letter and the effects are exactly
 * those of retries inside the call ({@link KafkaDropInIT}).
 */
class KafkaHandBackIT extends KafkaOwnsRetriesContract {

  @Override
  String topic() {
    return HAND_BACKS;
  }
}
