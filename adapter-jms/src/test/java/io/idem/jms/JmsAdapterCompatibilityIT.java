package io.idem.jms;

import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.BrokerAdapterCompatibilityKit;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixConsumerFactory;
import java.util.HashMap;
import java.util.Map;
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

  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return JmsCrashMatrixFactory.class;
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    ArtemisFixture artemis = ArtemisFixture.shared();
    Map<String, String> properties = new HashMap<>(Map.of("url", artemis.url()));
    if (artemis.user() != null) {
      properties.put("user", artemis.user());
      properties.put("password", artemis.password() == null ? "" : artemis.password());
    }
    return properties;
  }

  /**
   * DURING_ACK inside {@code Session.commit()}, DEAD_LETTER_COPY_STORED after the dead-letter
   * {@code send} in a {@code CLIENT_ACKNOWLEDGE} session ({@link JmsCrashMatrixFactory}); Artemis'
   * duplicate detection drops the second copy there (docs/FAILURES.md "The second copy").
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return matrix.interceptedBrokerCalls(true).deadLetterCopiesDeduplicated(true);
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource(), PostgresFixture.shared().password());
  }
}
