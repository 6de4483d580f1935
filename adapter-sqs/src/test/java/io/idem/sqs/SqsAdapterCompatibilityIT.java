package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

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
  }

  @Nested
  class StandardQueue extends SqsKit {
    @Override
    boolean fifo() {
      return false;
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
