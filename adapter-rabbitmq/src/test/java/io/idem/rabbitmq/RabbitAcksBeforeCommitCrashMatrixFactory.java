package io.idem.rabbitmq;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreHealth;
import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;
import java.time.Duration;
import org.apache.ibatis.session.SqlSession;

/**
 * A deliberately wrong adapter for {@link RabbitCrashMatrixRejectsAWrongAdapterIT}: the real
 * RabbitMQ consumer, but every delivery is acked before the pipeline runs it (an adapter that
 * acks on receipt), so a crash before the commit loses the message.
 */
public final class RabbitAcksBeforeCommitCrashMatrixFactory implements CrashMatrixConsumerFactory {

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    IdempotentConsumer<SqlSession> right = context.kitPipeline(store);
    IdempotentConsumer<SqlSession> wrong = new IdempotentConsumer<>() {
      @Override
      public ProcessingOutcome process(InboundMessage message, Acknowledgement acknowledgement) {
        acknowledgement.ack(); // the bug: settled before the transaction ran
        return right.process(message, new Acknowledgement() {
          @Override
          public void ack() {}

          @Override
          public void retry(Duration delay) {}

          @Override
          public void deadLetter(DeadLetterReason reason) {}
        });
      }

      @Override
      public String consumerGroup() {
        return right.consumerGroup();
      }

      @Override
      public RetryPolicy retryPolicy() {
        return right.retryPolicy();
      }

      @Override
      public StoreHealth storeHealth() {
        return right.storeHealth();
      }
    };
    RabbitIdempotentConsumer consumer = RabbitIdempotentConsumer.create(
        RabbitConsumerConfig.builder(context.destination())
            .uri(context.property("uri"))
            .queueType(RabbitQueueType.CLASSIC)
            .connectionName("idem-test-crash-wrong-" + context.destination())
            // per message: in batch mode the early ack() only hands the tag to the batch, which
            // acks after the batch's COMMIT — the bug would not show
            .maxBatchSize(1)
            .build(),
        wrong);
    consumer.start();
    return consumer;
  }
}
