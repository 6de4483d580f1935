package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrix;
import io.idem.testkit.CrashMatrixReport;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crash matrix's user-facing entry point ({@link CrashMatrix}) on a user's own handler and
 * schema ({@link RabbitUserHandlerCrashMatrixFactory}: a table of orders), on a RabbitMQ classic
 * queue: every crash point and the process-killing message, effects counted per key in the
 * user's table.
 */
class RabbitCrashMatrixForAUsersHandlerIT {
  private static HikariDataSource dataSource;

  @BeforeAll
  static void openDatabase() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("rabbit_crash_user");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + RabbitUserHandlerCrashMatrixFactory.TABLE
          + " (id bigserial PRIMARY KEY, order_key text NOT NULL, body bytea NOT NULL)");
    }
    MyBatisProcessedEventStore.builder(new SqlSessionFactoryBuilder().build(new Configuration(
        new Environment("t", new JdbcTransactionFactory(), dataSource)))).createTableIfMissing(true).build();
  }

  @AfterAll
  static void closeDatabase() {
    dataSource.close();
  }

  @Test
  void everyCrashPointAndAProcessKillingMessageLeaveEachOrderPlacedOnce() {
    CrashMatrixReport report = CrashMatrix.builder(RabbitUserHandlerCrashMatrixFactory.class)
        .harness(name -> new RabbitHarness(name, RabbitQueueType.CLASSIC))
        .effects((run, key) -> orders(key))
        .jdbc(CrashMatrix.Jdbc.of(dataSource, PostgresFixture.shared().password()))
        .property("uri", RabbitFixture.shared().uri())
        .run();

    report.assertPassed();
    assertThat(report.points()).extracting(CrashMatrixReport.Point::name)
        .containsExactly("BEFORE_CLAIM", "AFTER_HANDLER", "AFTER_COMMIT", "DURING_ACK", CrashMatrix.POISON);
    CrashMatrixReport.Point poison = report.point(CrashMatrix.POISON);
    assertThat(poison.crashes()).as("deaths of the process-killing message").isBetween(1L, 3L);
    assertThat(poison.deadLetters()).hasSize(1);
    assertThat(report.point("AFTER_COMMIT").effects()).hasSize(20).allSatisfy((key, n) -> assertThat(n).isEqualTo(1));
  }

  private static int orders(String key) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(
            "SELECT count(*) FROM " + RabbitUserHandlerCrashMatrixFactory.TABLE + " WHERE order_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
