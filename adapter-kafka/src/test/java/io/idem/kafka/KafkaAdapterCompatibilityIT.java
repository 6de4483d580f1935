package io.idem.kafka;

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

/** The adapter compatibility kit on a real Kafka broker and the real PostgreSQL. */
class KafkaAdapterCompatibilityIT extends BrokerAdapterCompatibilityKit {
  private static HikariDataSource dataSource;

  @Override
  protected DataSource dataSource() {
    synchronized (KafkaAdapterCompatibilityIT.class) {
      if (dataSource == null) {
        dataSource = PostgresFixture.shared().newSchema("kafka_kit");
      }
      return dataSource;
    }
  }

  @AfterAll
  static void closeDataSource() {
    synchronized (KafkaAdapterCompatibilityIT.class) {
      if (dataSource != null) {
        dataSource.close();
        dataSource = null;
      }
    }
  }

  @Override
  protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
    return MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
  }

  @Override
  protected BrokerHarness harness(String name) {
    return new KafkaHarness(name);
  }
}
