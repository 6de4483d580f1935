package io.idem.jms;

import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/** The adapter compatibility kit on ActiveMQ Artemis (two worker sessions per consumer). */
class JmsAdapterCompatibilityIT extends BrokerAdapterCompatibilityKit {

  @Override
  protected DataSource dataSource() {
    return JmsTestDatabase.dataSource();
  }

  @Override
  protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
    return MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
  }

  @Override
  protected BrokerHarness harness(String name) {
    return new JmsHarness(name);
  }
}
