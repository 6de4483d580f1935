package io.idem.sqs;

import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixConsumerFactory;
import java.util.Map;
import java.util.OptionalInt;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * The broker adapter kit on SQS (ElasticMQ or LocalStack), shared by {@link
 * SqsAdapterCompatibilityIT} (the default configuration: batch mode) and {@link
 * SqsAdapterCompatibilityPerMessageIT} ({@code maxBatchSize(1)}): two test classes, so that the
 * test JVMs of the module run them side by side (each variant's crash matrix takes minutes).
 */
abstract class SqsCompatibilityKit extends BrokerAdapterCompatibilityKit {
  abstract boolean fifo();

  /** The {@code maxBatchSize} the variant sets; empty = the builder's default. */
  OptionalInt maxBatchSize() {
    return OptionalInt.empty();
  }

  @Override
  protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
    return MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
  }

  @Override
  protected BrokerHarness harness(String name) {
    OptionalInt size = maxBatchSize();
    return new SqsHarness(name, fifo(), Map.of(), b -> size.isPresent() ? b.maxBatchSize(size.getAsInt()) : b);
  }

  /** The crash matrix on every variant: standard and FIFO queue, per message and in batches. */
  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return SqsCrashMatrixFactory.class;
  }

  /**
   * DURING_ACK inside DeleteMessage(Batch), DEAD_LETTER_COPY_STORED after the SendMessage to the
   * DLQ ({@link SqsCrashMatrixFactory}); a FIFO dead-letter queue drops the second copy (its
   * deduplication id is the original's MessageId), a standard one keeps it (docs/FAILURES.md
   * "The second copy"). The adapter merges the deletes of {@code deleteBatchWindow} (100 ms)
   * into one {@code DeleteMessageBatch}, so a point's 25 deliveries may settle with one or two
   * calls: the crash life halts at the first pass of a point, not the fourth.
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return matrix.interceptedBrokerCalls(true).deadLetterCopiesDeduplicated(fifo()).crashAfter(0);
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    SqsHarness sqs = (SqsHarness) harness;
    return Map.of("queue-url", sqs.queueUrl(), "dlq-url", sqs.dlqUrl(),
        "endpoint", SqsFixture.shared().endpoint().toString(), "region", SqsFixture.shared().region(),
        "max-batch-size", maxBatchSize().isPresent() ? Integer.toString(maxBatchSize().getAsInt()) : "default");
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource(), PostgresFixture.shared().password());
  }
}
