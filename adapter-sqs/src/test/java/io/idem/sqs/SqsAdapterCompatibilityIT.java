package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/**
 * The broker adapter kit on a standard queue and on a FIFO queue (ElasticMQ or LocalStack) with the
 * default configuration, batch mode ({@link SqsConsumerConfig#DEFAULT_MAX_BATCH_SIZE}); per-message
 * mode is {@link SqsAdapterCompatibilityPerMessageIT}.
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

  abstract class Kit extends SqsCompatibilityKit {
    @Override
    protected DataSource dataSource() {
      return dataSource;
    }
  }

  @Nested
  class StandardQueue extends Kit {
    @Override
    boolean fifo() {
      return false;
    }
  }

  @Nested
  class FifoQueue extends Kit {
    @Override
    boolean fifo() {
      return true;
    }
  }
}
