package io.idem.rabbitmq;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
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

/**
 * The adapter kit on the real RabbitMQ and PostgreSQL; one subclass per queue type
 * ({@link RabbitClassicQueueCompatibilityIT}, {@link RabbitQuorumQueueCompatibilityIT}).
 */
abstract class RabbitAdapterCompatibilityIT extends BrokerAdapterCompatibilityKit {
  private static HikariDataSource dataSource;

  /** The queue type every kit test of the subclass runs on. */
  abstract RabbitQueueType queueType();

  @BeforeAll
  static void openDatabase() {
    dataSource = PostgresFixture.shared().newSchema("rabbit_kit");
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
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
    return new RabbitHarness(name, queueType());
  }

  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return RabbitCrashMatrixFactory.class;
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    return Map.of("uri", RabbitFixture.shared().uri(), "queue-type", queueType().name());
  }

  /**
   * DURING_ACK inside {@code basicAck}, DEAD_LETTER_COPY_STORED after the copy's confirm ({@link
   * RabbitCrashMatrixFactory} wraps the channels); RabbitMQ keeps a second copy after that crash
   * (docs/FAILURES.md "The second copy").
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return matrix.interceptedBrokerCalls(true);
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource, PostgresFixture.shared().password());
  }
}
