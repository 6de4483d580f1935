package io.idem.testkit;

/** Where {@link CrashInjector} halts the JVM, named after the pipeline step it interrupts. */
public enum CrashPoint {
  /** After the key was extracted, before the transaction opened and claimed it. */
  BEFORE_CLAIM,
  /** After the handler wrote, before the transaction committed. */
  AFTER_HANDLER,
  /** After the transaction committed, before the broker was told (acked). */
  AFTER_COMMIT,
  /**
   * Inside the acknowledgement's broker call. Where the child JVM wraps its broker client and
   * calls {@link CrashInjector#atBrokerOperation} when the broker operation that settles a message
   * has been performed (SQS {@code DeleteMessage} / {@code DeleteMessageBatch}, including a batch
   * flushed later), the halt lands there: the broker settled the message, the adapter never learned
   * it. Without such a wrapper ({@code idem.crash.broker-calls} not {@code intercepted}), a separate
   * thread halts the JVM a moment after the commit ({@code idem.crash.ack-delay-micros}, default
   * 300 µs), which lands near the ack but not provably inside it (on Kafka {@code ack()} only
   * records a decision, so it is really {@link #AFTER_COMMIT} there).
   */
  DURING_ACK,
  /**
   * Inside dead-lettering, between the two broker operations: the dead-letter copy was stored
   * (the broker accepted it: Kafka's {@code .DLT} send acknowledged, RabbitMQ's publish
   * confirmed, SQS' {@code SendMessage} to the DLQ answered, a JMS {@code send} returned), the
   * original was not removed yet (offset commit, {@code basicAck}, {@code DeleteMessage}, {@code
   * acknowledge()}); the decision is already in the store. Needs a child JVM that wraps its broker
   * client and calls {@link CrashInjector#atBrokerOperation} once the copy is stored; not possible
   * in a transacted JMS session, where copy and removal are one transaction (a {@code
   * CLIENT_ACKNOWLEDGE} session has it: the persistent send, then {@code acknowledge()}). {@link
   * CrashMatrix} runs it with messages whose handler fails ({@link CrashMatrix#DEAD_LETTER_HEADER}).
   */
  DEAD_LETTER_COPY_STORED
}
