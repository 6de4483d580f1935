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
import java.util.OptionalInt;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;

/**
 * The adapter compatibility kit on a real Kafka broker and the real PostgreSQL, with the default
 * configuration (batch mode, {@link KafkaConsumerConfig#DEFAULT_MAX_BATCH_SIZE}), crash matrix
 * included; {@link KafkaAdapterCompatibilityConsumerProtocolIT} runs it in per-message mode.
 */
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
    return new KafkaHarness(name, Map.of(), maxBatchSize());
  }

  /** The kit consumers' {@code maxBatchSize}, also the crash matrix child's; empty = the default (batch mode). */
  OptionalInt maxBatchSize() {
    return OptionalInt.empty();
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
    OptionalInt size = maxBatchSize();
    return Map.of("bootstrap", KafkaTestClients.bootstrap(), "group-protocol", groupProtocol(),
        "max-batch-size", size.isPresent() ? Integer.toString(size.getAsInt()) : "default");
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
