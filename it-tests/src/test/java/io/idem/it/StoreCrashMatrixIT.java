package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.Dialect;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixReport;
import io.idem.testkit.KitEffects;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The crash matrix per database: the testkit's {@link CrashMatrix} (a consumer in a child JVM
 * halted like {@code kill -9} before the claim, after the handler wrote, after the commit, during
 * the ack, and a message that kills the process in every life) against the processed-events store
 * on each database store-jdbc supports, on one broker (RabbitMQ: the local server, nothing to
 * start; the main job's quorum queue with its dead-letter queue, {@link DemoBrokerHarness}). Every
 * key must be applied exactly once, nothing dead-lettered but the poison, which is dead-lettered
 * with {@code MAX_ATTEMPTS_EXCEEDED} after at most three deaths. On MariaDB this is where the
 * store's differences meet a dying process: the marker re-read after the handler instead of
 * PostgreSQL's transaction id, no early-marker clean-up by {@code xmin}, the attempt rows
 * committed before the handler (docs/STORE.md, "Databases"). The main job's own matrix on every
 * broker is {@link CrashMatrixIT}.
 */
class StoreCrashMatrixIT {
  private static final String BROKER = "rabbitmq";

  @ParameterizedTest(name = "{0}, on RabbitMQ")
  @EnumSource(Dialect.class)
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void everyCrashPointAndAProcessKillingMessageLeaveEachKeyAppliedOnce(Dialect database) throws Exception {
    try (HikariDataSource dataSource = database == Dialect.MARIADB
            ? MariaDbFixture.shared().newDatabase("crash_store")
            : PostgresFixture.shared().newSchema("crash_store");
        DemoBroker broker = DemoBrokers.create(BROKER)) {
      MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(new SqlSessionFactoryBuilder()
          .build(new Configuration(new Environment("t", new JdbcTransactionFactory(), dataSource))))
          .createTableIfMissing(true).build();
      assertThat(store.dialect()).isEqualTo(database);
      new KitEffects(dataSource, "").createTable();
      System.out.println("[" + database + "] " + broker.start());
      Map<String, String> properties = new LinkedHashMap<>();
      properties.put(DemoBrokerCrashMatrixFactory.BROKER, BROKER);
      for (String arg : broker.connectionArgs()) { // --rabbitmq-uri=amqp://…
        String[] nameValue = arg.substring(2).split("=", 2);
        properties.put(nameValue[0], nameValue[1]);
      }
      String password = database == Dialect.MARIADB
          ? MariaDbFixture.shared().password() : PostgresFixture.shared().password();

      CrashMatrixReport report = CrashMatrix.builder(DemoBrokerCrashMatrixFactory.class)
          .harness(name -> new DemoBrokerHarness(broker, "idem-it-" + name))
          .effects((run, key) -> new KitEffects(dataSource, run).count(key))
          .jdbc(CrashMatrix.Jdbc.of(dataSource, password))
          .properties(properties)
          .run();

      report.assertPassed();
      assertThat(report.points()).extracting(CrashMatrixReport.Point::name)
          .containsExactly("BEFORE_CLAIM", "AFTER_HANDLER", "AFTER_COMMIT", "DURING_ACK", CrashMatrix.POISON);
      for (CrashMatrixReport.Point point : report.points()) {
        assertThat(point.doubledKeys()).as("keys applied twice at %s", point.name()).isEmpty();
        assertThat(point.missingKeys()).as("keys never applied at %s", point.name()).isEmpty();
      }
      CrashMatrixReport.Point poison = report.point(CrashMatrix.POISON);
      assertThat(poison.crashes()).as("deaths of the process-killing message").isBetween(1L, 3L);
      assertThat(poison.deadLetters()).hasSize(1);
      assertThat(report.point("AFTER_COMMIT").effects()).hasSize(20).allSatisfy((key, n) -> assertThat(n).isEqualTo(1));
    }
  }
}
