package io.idem.sqs;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

/** The broker adapter kit on a standard queue and on a FIFO queue (ElasticMQ or LocalStack). */
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
      return new SqsHarness(name, fifo());
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
}
