package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/**
 * The broker adapter kit on a standard queue and on a FIFO queue (ElasticMQ or LocalStack) in batch
 * mode ({@code maxBatchSize} 10); per message is {@link SqsAdapterCompatibilityIT}.
 */
class SqsAdapterCompatibilityBatchModeIT {
  private static HikariDataSource dataSource;

  @BeforeAll
  static void database() {
    dataSource = PostgresFixture.shared().newSchema("sqs_batch_kit");
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
  }

  abstract class Kit extends SqsCompatibilityKit {
    @Override
    protected DataSource dataSource() {
      return dataSource;
    }
  }

  @Nested
  class StandardQueueInBatchMode extends Kit {
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
  class FifoQueueInBatchMode extends Kit {
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
