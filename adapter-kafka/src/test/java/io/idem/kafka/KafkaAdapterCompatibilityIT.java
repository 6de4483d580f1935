package io.idem.kafka;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
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

  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return KafkaCrashMatrixFactory.class;
  }

  /** The consumer group protocol of the kit's consumers, passed to the crash matrix's child. */
  String groupProtocol() {
    return "classic";
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    return Map.of("bootstrap", KafkaTestClients.bootstrap(), "group-protocol", groupProtocol());
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource(), PostgresFixture.shared().password());
  }

  /**
   * DURING_ACK inside the offset commit, DEAD_LETTER_COPY_STORED once the {@code .DLT} send was
   * acknowledged ({@link KafkaCrashMatrixFactory} wraps {@code commitSync} and the producer); a
   * second copy in the DLT after that crash is what docs/FAILURES.md promises for Kafka.
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return matrix.interceptedBrokerCalls(true);
  }
}
