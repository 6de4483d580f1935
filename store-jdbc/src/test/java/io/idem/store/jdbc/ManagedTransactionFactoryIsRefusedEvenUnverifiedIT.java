package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import org.apache.ibatis.datasource.unpooled.UnpooledDataSource;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.ibatis.transaction.managed.ManagedTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Regression: the check that commit ends the transaction ran only against the database, so
 * {@code verifyTable(false)} (docs/STORE.md's advice when the database may be down at start-up) let
 * MyBatis' ManagedTransactionFactory through, whose commit does nothing: the pipeline acked and
 * the pool rolled marker and effect back.
 */
class ManagedTransactionFactoryIsRefusedEvenUnverifiedIT {
  private static HikariDataSource pool;
  /** Nothing listens on port 1: any attempt to reach this database fails. */
  private static final UnpooledDataSource DOWN =
      new UnpooledDataSource("org.postgresql.Driver", "jdbc:postgresql://127.0.0.1:1/test", "postgres", "");

  @BeforeAll
  static void setUp() {
    PostgresFixture.shared().createSchema("idem_managed_unverified");
    // autoCommit=false: where ManagedTransactionFactory's ignored commit loses effects
    pool = AutoCommitSessionsAreRefusedIT.pool("idem_managed_unverified", false);
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  @Test
  void managedTransactionsAreRefusedWithVerifyTableOff() {
    SqlSessionFactory managed =
        AutoCommitSessionsAreRefusedIT.sessions(new ManagedTransactionFactory(), pool);
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(managed).verifyTable(false).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("ManagedTransactionFactory, whose commit and rollback do nothing")
        .hasMessageContaining("after the message was acknowledged")
        .hasMessageContaining("JdbcTransactionFactory")
        .hasMessageContaining("SpringManagedTransactionFactory");
  }

  @Test
  void managedTransactionsAreRefusedWithoutReachingTheDatabase() {
    SqlSessionFactory managed = AutoCommitSessionsAreRefusedIT.sessions(new ManagedTransactionFactory(), DOWN);
    for (boolean verify : new boolean[] {false, true}) {
      assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(managed).verifyTable(verify).build())
          .as("verifyTable(%s)", verify)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("ManagedTransactionFactory");
    }
  }

  @Test
  void jdbcTransactionsBuildUnverifiedWhileTheDatabaseIsDown() {
    SqlSessionFactory jdbc = AutoCommitSessionsAreRefusedIT.sessions(new JdbcTransactionFactory(), DOWN);
    assertThat(MyBatisProcessedEventStore.builder(jdbc).verifyTable(false).build()).isNotNull();
  }

  @Test
  void aConfigurationWithoutAnEnvironmentIsRefusedClearly() {
    SqlSessionFactory bare = new SqlSessionFactoryBuilder().build(new Configuration());
    for (boolean verify : new boolean[] {false, true}) {
      assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(bare).verifyTable(verify).build())
          .as("verifyTable(%s)", verify)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("has no Environment")
          .hasMessageContaining("JdbcTransactionFactory");
    }
  }
}
