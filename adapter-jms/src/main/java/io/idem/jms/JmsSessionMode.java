package io.idem.jms;

/**
 * How a {@link JmsIdempotentConsumer} worker settles messages with the broker. Each worker owns
 * one JMS connection and one session in this mode and processes one message at a time, or one
 * batch ({@link JmsConsumerConfig#maxBatchSize()}) settled once.
 */
public enum JmsSessionMode {
  /**
   * A transacted session ({@code Session.SESSION_TRANSACTED}), the default. The message is
   * consumed in a JMS transaction that is committed only after the database transaction
   * committed; a failure rolls back the database first, then the JMS session, so the broker
   * redelivers it with a higher {@code JMSXDeliveryCount}. A dead-letter copy is sent in the same
   * JMS transaction as the consumption of the original, so the move is atomic.
   */
  TRANSACTED,

  /**
   * {@code Session.CLIENT_ACKNOWLEDGE}. {@code Message.acknowledge()} acknowledges every message
   * the session has delivered so far, not just the one it is called on; this is safe here only
   * because each worker has its own session and settles each message (or batch) before receiving
   * the next, so one worker's acknowledgement never covers another worker's in-flight message; in
   * batch mode it is meant to cover the whole batch. A failure
   * calls {@code Session.recover()} (redelivery, {@code JMSXDeliveryCount} rises). A dead-letter
   * copy is sent (a persistent send, which the provider confirms before it returns) and only
   * then is the original acknowledged: a crash in between leaves two copies (the original comes
   * back and is dead-lettered again), never none.
   */
  CLIENT_ACKNOWLEDGE
}
