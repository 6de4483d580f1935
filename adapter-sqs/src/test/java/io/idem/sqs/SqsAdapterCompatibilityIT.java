package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixConsumerFactory;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.jspecify.annotations.Nullable;

/**
 * The broker adapter kit on a standard queue and on a FIFO queue (ElasticMQ or LocalStack), in
 * per-message mode and in batch mode ({@code maxBatchSize} 10).
 */
class SqsAdapterCompatibilityIT {
  private static HikariDataSource dataSource;

  @BeforeAll
  static void database() {
    dataSource = PostgresFixture.shared().newSchema("sqs_kit");
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
  }

  abstract static class SqsKit extends BrokerAdapterCompatibilityKit {
    abstract boolean fifo();

    int maxBatchSize() {
      return 1;
    }

    @Override
    protected DataSource dataSource() {
      return dataSource;
    }

    @Override
    protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
      return MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    }

    @Override
    protected BrokerHarness harness(String name) {
      return new SqsHarness(name, fifo(), Map.of(), b -> b.maxBatchSize(maxBatchSize()));
    }

    /** The crash matrix runs once for SQS, on the standard queue in per-message mode. */
    @Override
    protected @Nullable Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
      return null;
    }

    @Override
    protected Map<String, String> crashProperties(BrokerHarness harness) {
      SqsHarness sqs = (SqsHarness) harness;
      return Map.of("queue-url", sqs.queueUrl(), "dlq-url", sqs.dlqUrl(),
          "endpoint", SqsFixture.shared().endpoint().toString(), "region", SqsFixture.shared().region(),
          "max-batch-size", Integer.toString(maxBatchSize()));
    }

    @Override
    protected CrashMatrix.Jdbc crashJdbc() {
      return CrashMatrix.Jdbc.of(dataSource, PostgresFixture.shared().password());
    }
  }

  @Nested
  class StandardQueue extends SqsKit {
    @Override
    boolean fifo() {
      return false;
    }

    @Override
    protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
      return SqsCrashMatrixFactory.class;
    }
  }

  @Nested
  class FifoQueue extends SqsKit {
    @Override
    boolean fifo() {
      return true;
    }
  }

  @Nested
  class StandardQueueInBatchMode extends SqsKit {
    @Override
    boolean fifo() {
      return false;
    }

    @Override
    int maxBatchSize() {
      return 10;
    }
  }

  @Nested
  class FifoQueueInBatchMode extends SqsKit {
    @Override
    boolean fifo() {
      return true;
    }

    @Override
    int maxBatchSize() {
      return 10;
    }
  }
}
