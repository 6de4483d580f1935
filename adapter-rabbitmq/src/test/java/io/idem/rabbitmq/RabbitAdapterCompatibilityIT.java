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
import java.util.OptionalInt;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The adapter kit on the real RabbitMQ and PostgreSQL, crash matrix included; one subclass per
 * queue type and mode: {@link RabbitClassicQueueCompatibilityIT} per message ({@code
 * maxBatchSize(1)} set explicitly), {@link RabbitQuorumQueueCompatibilityIT} with the default
 * configuration (batch mode, {@link RabbitConsumerConfig#DEFAULT_MAX_BATCH_SIZE}). Two test
 * classes, so the module's test JVMs run the two crash matrices side by side.
 */
abstract class RabbitAdapterCompatibilityIT extends BrokerAdapterCompatibilityKit {
  private static HikariDataSource dataSource;

  /** The queue type every kit test of the subclass runs on. */
  abstract RabbitQueueType queueType();

  /** The {@code maxBatchSize} every consumer of the subclass sets; empty = the builder's default. */
  abstract OptionalInt maxBatchSize();

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
    return new RabbitHarness(name, queueType(), maxBatchSize());
  }

  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return RabbitCrashMatrixFactory.class;
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    OptionalInt size = maxBatchSize();
    return Map.of("uri", RabbitFixture.shared().uri(), "queue-type", queueType().name(),
        "max-batch-size", size.isPresent() ? Integer.toString(size.getAsInt()) : "default");
  }

  /**
   * DURING_ACK inside {@code basicAck}, DEAD_LETTER_COPY_STORED after the copy's confirm ({@link
   * RabbitCrashMatrixFactory} wraps the channels); RabbitMQ keeps a second copy after that crash
   * (docs/FAILURES.md "The second copy"). In batch mode one {@code basicAck(last, multiple=true)}
   * may settle a whole batch: a point's 25 deliveries (20 keys, 5 of them twice) can take as few as
   * 3 acks in batches of at most 10, so the crash life halts at the second pass of a point (at
   * least one ack before it and one after), not the fourth, which may never come (a clean-clone CI
   * run failed so: "the child did not crash at DURING_ACK").
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    CrashMatrix.Builder rabbit = matrix.interceptedBrokerCalls(true);
    return maxBatchSize().orElse(RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE) > 1 ? rabbit.crashAfter(1) : rabbit;
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource, PostgresFixture.shared().password());
  }
}
