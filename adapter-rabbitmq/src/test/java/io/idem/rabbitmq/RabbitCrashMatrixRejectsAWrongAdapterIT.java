package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixReport;
import io.idem.testkit.CrashPoint;
import io.idem.testkit.KitEffects;
import java.time.Duration;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crash matrix can fail: run through its user-facing entry point ({@link CrashMatrix}) against
 * an adapter that acks every delivery before the transaction ({@link
 * RabbitAcksBeforeCommitCrashMatrixFactory}), a crash after the handler loses the message, and
 * the report says which key was never applied.
 */
class RabbitCrashMatrixRejectsAWrongAdapterIT {
  private static HikariDataSource dataSource;

  @BeforeAll
  static void openDatabase() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("rabbit_crash_wrong");
    new KitEffects(dataSource, "-").createTable();
    MyBatisProcessedEventStore.builder(new SqlSessionFactoryBuilder().build(new Configuration(
        new Environment("t", new JdbcTransactionFactory(), dataSource)))).createTableIfMissing(true).build();
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
  }

  @Test
  void aCrashAfterTheHandlerOfAnAdapterThatAcksBeforeTheCommitLosesAMessage() {
    CrashMatrixReport report = CrashMatrix.builder(RabbitAcksBeforeCommitCrashMatrixFactory.class)
        .harness(name -> new RabbitHarness(name, RabbitQueueType.CLASSIC))
        .effects((run, key) -> new KitEffects(dataSource, run).count(key))
        .jdbc(CrashMatrix.Jdbc.of(dataSource, PostgresFixture.shared().password()))
        .property("uri", RabbitFixture.shared().uri())
        .points(CrashPoint.AFTER_HANDLER)
        .poisonMessage(false)
        .timeout(Duration.ofSeconds(60))
        .run();

    CrashMatrixReport.Point point = report.point("AFTER_HANDLER");
    assertThat(point.crashes()).isEqualTo(1);
    assertThat(point.missingKeys()).as("lost to the crash").isNotEmpty();
    assertThat(report.problems()).anyMatch(p -> p.startsWith("AFTER_HANDLER: never applied: "));
    assertThatThrownBy(report::assertPassed).isInstanceOf(AssertionError.class)
        .hasMessageContaining("never applied").hasMessageContaining("output of AFTER_HANDLER-crash");
  }
}
