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
import java.util.OptionalInt;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;

/**
 * The adapter compatibility kit on ActiveMQ Artemis (two worker sessions per consumer), its crash
 * matrix included, shared by {@link JmsAdapterCompatibilityIT} (the default configuration: batch
 * mode) and {@link JmsAdapterCompatibilityPerMessageIT} ({@code maxBatchSize(1)}): two test
 * classes, so that the module's test JVMs run them side by side.
 */
abstract class JmsCompatibilityKit extends BrokerAdapterCompatibilityKit {

  @Override
  protected DataSource dataSource() {
    return JmsTestDatabase.dataSource();
  }

  @Override
  protected ProcessedEventStore<SqlSession> store(SqlSessionFactory sessions) {
    return MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
  }

  /**
   * The {@code maxBatchSize} the variant sets on the kit's consumers and the crash matrix's; empty
   * = the builder's default (batch mode).
   */
  OptionalInt maxBatchSize() {
    return OptionalInt.empty();
  }

  @Override
  protected BrokerHarness harness(String name) {
    OptionalInt size = maxBatchSize();
    return new JmsHarness(name,
        b -> size.isPresent() ? b.concurrency(2).maxBatchSize(size.getAsInt()) : b.concurrency(2));
  }

  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return JmsCrashMatrixFactory.class;
  }

  @Override
  protected Map<String, String> crashProperties(BrokerHarness harness) {
    ArtemisFixture artemis = ArtemisFixture.shared();
    OptionalInt size = maxBatchSize();
    Map<String, String> properties = new HashMap<>(Map.of("url", artemis.url(),
        "max-batch-size", size.isPresent() ? Integer.toString(size.getAsInt()) : "default"));
    if (artemis.user() != null) {
      properties.put("user", artemis.user());
      properties.put("password", artemis.password() == null ? "" : artemis.password());
    }
    return properties;
  }

  /**
   * DURING_ACK inside {@code Session.commit()}, DEAD_LETTER_COPY_STORED after the dead-letter
   * {@code send} in a {@code CLIENT_ACKNOWLEDGE} session ({@link JmsCrashMatrixFactory}); Artemis'
   * duplicate detection drops the second copy there (docs/FAILURES.md "The second copy"). In
   * batch mode one commit settles a whole batch: a point's 25 deliveries (20 keys, 5 of them twice)
   * take at least 3 commits in batches of at most 10, so the crash life halts at the second pass of
   * a point (at least one commit before it and one after), not the fourth, which may never come.
   */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    CrashMatrix.Builder jms = matrix.interceptedBrokerCalls(true).deadLetterCopiesDeduplicated(true);
    return maxBatchSize().orElse(JmsConsumerConfig.DEFAULT_MAX_BATCH_SIZE) > 1 ? jms.crashAfter(1) : jms;
  }

  @Override
  protected CrashMatrix.Jdbc crashJdbc() {
    return CrashMatrix.Jdbc.of(dataSource(), PostgresFixture.shared().password());
  }
}
