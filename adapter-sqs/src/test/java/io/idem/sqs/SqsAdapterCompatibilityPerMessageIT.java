package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import java.util.OptionalInt;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/**
 * The broker adapter kit on a standard queue and on a FIFO queue (ElasticMQ or LocalStack) in
 * per-message mode, set explicitly ({@code maxBatchSize(1)}); the default configuration (batch
 * mode) is {@link SqsAdapterCompatibilityIT}.
 */
class SqsAdapterCompatibilityPerMessageIT {
  private static HikariDataSource dataSource;

  @BeforeAll
  static void database() {
    dataSource = PostgresFixture.shared().newSchema("sqs_per_message_kit");
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
  }

  /** Per-message mode, set explicitly. */
  abstract class Kit extends SqsCompatibilityKit {
    @Override
    protected DataSource dataSource() {
      return dataSource;
    }

    @Override
    OptionalInt maxBatchSize() {
      return OptionalInt.of(1);
    }
  }

  @Nested
  class StandardQueuePerMessage extends Kit {
    @Override
    boolean fifo() {
      return false;
    }
  }

  @Nested
  class FifoQueuePerMessage extends Kit {
    @Override
    boolean fifo() {
      return true;
    }
  }
}
