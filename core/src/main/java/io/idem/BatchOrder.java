package io.idem;

/**
 * Whether the messages of a batch must be settled in order, for {@link
 * IdempotentConsumer#processBatch(java.util.List, java.util.List, BatchOrder)}. It matters only
 * when the batch's transaction failed and the batch is redone message by message, or when the
 * whole batch is handed back.
 */
public enum BatchOrder {
  /**
   * The batch is one ordered sequence (one Kafka partition, one SQS FIFO message group, one
   * RabbitMQ queue with a single active consumer): nothing behind a message that is handed back
   * ({@link ProcessingOutcome#isRetry()}) or whose acknowledgement failed is started, so a later
   * message never overtakes an earlier one. Those messages come back {@linkplain
   * BatchResult#stoppedAt() not started}: the adapter hands them back to the broker itself,
   * without counting an attempt, exactly as messages it had prefetched. An adapter whose receive
   * mixes several ordering units (a Kafka poll over several partitions, an SQS FIFO receive over
   * several message groups) calls {@code processBatch} once per unit, so that the others go on.
   */
  ORDERED,

  /**
   * No order between the messages (a standard SQS queue, RabbitMQ with competing consumers): a
   * redo processes every message, whatever happened to the ones before it.
   */
  UNORDERED
}
