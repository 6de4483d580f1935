package io.idem.testkit;

import io.idem.BrokerConsumer;

/**
 * Starts the consumer under test inside the crash matrix's child JVM ({@link CrashMatrix}): the
 * one piece of code an adapter author or a user writes to get the crash points checked. It runs in
 * the child only, so everything it needs arrives through the {@link CrashMatrixContext}: the
 * destination, the consumer group, the database and the properties the parent passed (broker
 * addresses, queue URLs).
 *
 * <p>The implementation must be a public class with a public no-argument constructor (the child
 * instantiates it by name). {@link #start} builds the pipeline with {@link
 * CrashMatrixContext#crashListener()} among its listeners — or uses {@link
 * CrashMatrixContext#kitPipeline} for the adapter kit's pipeline — and returns the started
 * consumer; the child closes it when the parent tells it to stop. An adapter that flags possible
 * redeliveries counts process deaths (docs/FAILURES.md "Attempts that survive the process").
 *
 * <pre>{@code
 * public final class MyCrashFactory implements CrashMatrixConsumerFactory {
 *   public BrokerConsumer start(CrashMatrixContext ctx) {
 *     IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(myStore(ctx.sessions()))
 *         .consumerGroup(ctx.consumerGroup())
 *         .handler(myHandler)
 *         .listener(ctx.crashListener())
 *         .build();
 *     BrokerConsumer consumer = KafkaIdempotentConsumer.create(
 *         KafkaConsumerConfig.builder(ctx.property("bootstrap"), ctx.destination()).build(), pipeline);
 *     consumer.start();
 *     return consumer;
 *   }
 * }
 * }</pre>
 */
@FunctionalInterface
public interface CrashMatrixConsumerFactory {

  /**
   * Builds and starts one consumer on {@link CrashMatrixContext#destination()}.
   *
   * @return the started consumer; closed by the child when it is told to stop
   * @throws Exception anything: the child prints it and exits with status 2, failing the run
   */
  BrokerConsumer start(CrashMatrixContext context) throws Exception;
}
