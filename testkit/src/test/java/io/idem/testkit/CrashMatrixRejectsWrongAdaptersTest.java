package io.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.fixtures.PostgresFixture;
import java.time.Duration;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crash matrix's self-test, on a broker that is a PostgreSQL table ({@link TableBroker}): a
 * right adapter passes the crash points (the halt after a dead-letter copy too) and the
 * process-killing message, one that acks before the commit fails with the key a crash lost, one
 * that does not flag redeliveries lets the poison kill every life, one whose dead-letter copy
 * lacks the reason fails the dead-letter point.
 */
class CrashMatrixRejectsWrongAdaptersTest {
  private static com.zaxxer.hikari.HikariDataSource dataSource;

  @BeforeAll
  static void database() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("crash_matrix_self_test");
    TableBroker.createTables(dataSource);
    new KitEffects(dataSource, "-").createTable();
    new FakeAdapters.SqlStore(new SqlSessionFactoryBuilder().build(
        new Configuration(new Environment("t", new JdbcTransactionFactory(), dataSource))));
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  private static CrashMatrix.Builder matrix(Class<? extends CrashMatrixConsumerFactory> factory) {
    DataSource ds = dataSource;
    return CrashMatrix.builder(factory)
        .harness(name -> new TableBroker.Harness(ds, name))
        .effects((run, key) -> new KitEffects(ds, run).count(key))
        .jdbc(CrashMatrix.Jdbc.of(ds, PostgresFixture.shared().password()))
        .poisonMessage(false)
        .timeout(Duration.ofSeconds(60));
  }

  @Test
  void aRightAdapterPassesEveryCrashPointAndTheProcessKillingMessage() {
    CrashMatrixReport report = matrix(TableBroker.Correct.class).poisonMessage(true).run();

    report.assertPassed();
    assertThat(report.points()).hasSize(5);
    assertThat(report.points().subList(0, 4)).allSatisfy(p -> {
      assertThat(p.crashes()).as(p.name()).isEqualTo(1);
      assertThat(p.effects()).as(p.name()).hasSize(20).allSatisfy((k, n) -> assertThat(n).isEqualTo(1));
    });
    CrashMatrixReport.Point poison = report.point(CrashMatrix.POISON);
    assertThat(poison.crashes()).as("deaths: the first delivery, then two counted ones").isEqualTo(3);
    assertThat(poison.deadLetters()).singleElement()
        .satisfies(l -> assertThat(l.cause()).isEqualTo("MAX_ATTEMPTS_EXCEEDED"));
  }

  @Test
  void aRightAdapterHaltedAfterTheDeadLetterCopyDeadLettersTheFailingKeysOnlyAndAppliesTheOthersOnce() {
    CrashMatrixReport report = matrix(TableBroker.Correct.class).points(CrashPoint.DEAD_LETTER_COPY_STORED).run();

    report.assertPassed();
    CrashMatrixReport.Point point = report.point("DEAD_LETTER_COPY_STORED");
    assertThat(point.crashes()).isEqualTo(1);
    assertThat(point.lives().get(0).crashLine()).isEqualTo("IDEM-CRASH DEAD_LETTER_COPY_STORED insert crash_kit_dlq");
    // keys 3, 7, 11, 15, 19 fail; the halted one's original came back and was dead-lettered again
    assertThat(point.effects()).hasSize(20)
        .allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(k.matches(".*-(3|7|11|15|19)") ? 0 : 1));
    assertThat(point.deadLetters()).hasSize(6).allSatisfy(l -> assertThat(l.cause()).isEqualTo("NON_RETRYABLE"));
  }

  @Test
  void anAdapterWhoseDeadLetterCopyLacksTheReasonFailsTheDeadLetterPoint() {
    CrashMatrixReport report = matrix(TableBroker.DeadLettersWithoutReason.class)
        .points(CrashPoint.DEAD_LETTER_COPY_STORED).run();

    assertThat(report.problems()).anyMatch(p -> p.contains("lacks cause NON_RETRYABLE"));
    assertThatThrownBy(report::assertPassed).isInstanceOf(AssertionError.class);
  }

  @Test
  void anAdapterThatDoesNotFlagRedeliveriesLetsTheProcessKillingMessageLoop() {
    CrashMatrixReport report = matrix(TableBroker.NoRedeliveryFlag.class)
        .points().poisonMessage(true).run();

    CrashMatrixReport.Point poison = report.point(CrashMatrix.POISON);
    assertThat(poison.crashes()).isEqualTo(4);
    assertThat(report.problems()).anyMatch(p -> p.contains("killed the consumer 4 times and was not dead-lettered"));
  }

  @Test
  void anAdapterThatAcksBeforeTheCommitLosesTheMessageACrashAfterTheHandlerInterrupted() {
    CrashMatrixReport report = matrix(TableBroker.AcksBeforeCommit.class)
        .points(CrashPoint.AFTER_HANDLER).run();

    CrashMatrixReport.Point point = report.point("AFTER_HANDLER");
    assertThat(point.missingKeys()).hasSize(1);
    assertThat(report.problems()).containsExactly("AFTER_HANDLER: never applied: " + point.missingKeys());
    assertThatThrownBy(report::assertPassed).isInstanceOf(AssertionError.class)
        .hasMessageContaining("never applied").hasMessageContaining("IDEM-CRASH AFTER_HANDLER");
  }
}
