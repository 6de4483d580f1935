package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.Test;

/**
 * {@code build()} reads the database from the JDBC metadata and refuses one the store does not
 * support, naming it and the supported ones — whatever {@code verifyTable} says, before any SQL
 * is sent. The database here is a stand-in whose metadata says what it is; nothing else answers.
 */
class UnsupportedDatabaseIsRefusedAtBuildTest {

  @Test
  void anotherDatabaseIsRefusedNamingItAndTheSupportedOnes() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(database("H2", "2.2.224 (2023-09-17)", 2, 2))
            .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("H2 2.2.224 (2023-09-17)")
        .hasMessageContaining("does not support")
        .hasMessageContaining("PostgreSQL 12+, MariaDB 10.6+");
  }

  @Test
  void refusedAlsoWithoutTheTableChecks() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(
            database("Microsoft SQL Server", "16.00.4135", 16, 0)).verifyTable(false).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Microsoft SQL Server 16.00.4135")
        .hasMessageContaining("PostgreSQL 12+, MariaDB 10.6+");
  }

  @Test
  void mySqlIsRefusedUntilItIsVerified() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(database("MySQL", "8.0.36", 8, 0)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("MySQL 8.0.36")
        .hasMessageContaining("MariaDB 10.6+");
  }

  @Test
  void aMariaDbOlderThanTenSixIsRefused() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(
            database("MariaDB", "10.5.23-MariaDB", 10, 5)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("MariaDB 10.5.23-MariaDB")
        .hasMessageContaining("SKIP LOCKED");
  }

  @Test
  void mariaDbIsKnownAlsoThroughMySqlsDriver() throws Exception {
    // MySQL Connector/J names a MariaDB 10 server "MySQL", version "5.5.5-10.11.6-MariaDB"
    SqlSessionFactory mariadb = database("MySQL", "5.5.5-10.11.6-MariaDB", 5, 5);
    try (var session = mariadb.openSession()) {
      assertThat(Dialect.of(session.getConnection().getMetaData())).isEqualTo(Dialect.MARIADB);
    }
    SqlSessionFactory old = database("MySQL", "5.5.5-10.5.23-MariaDB", 5, 5);
    try (var session = old.openSession()) {
      assertThatThrownBy(() -> Dialect.of(session.getConnection().getMetaData()))
          .hasMessageContaining("5.5.5-10.5.23-MariaDB").hasMessageContaining("older");
    }
  }

  @Test
  void aDialectOtherThanTheDatabasesIsRefused() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(
            database("MariaDB", "10.11.19-MariaDB", 10, 11)).dialect(Dialect.POSTGRESQL).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("dialect(POSTGRESQL)")
        .hasMessageContaining("MariaDB 10.6+");
  }

  /** A session factory whose connections' metadata names {@code product} and nothing else works. */
  private static SqlSessionFactory database(String product, String version, int major, int minor) {
    DatabaseMetaData metadata = proxy(DatabaseMetaData.class, (method, args) -> switch (method) {
      case "getDatabaseProductName" -> product;
      case "getDatabaseProductVersion" -> version;
      case "getDatabaseMajorVersion" -> major;
      case "getDatabaseMinorVersion" -> minor;
      default -> null;
    });
    Connection connection = proxy(Connection.class, (method, args) -> switch (method) {
      case "getMetaData" -> metadata;
      case "getAutoCommit", "isClosed" -> false;
      case "getTransactionIsolation" -> Connection.TRANSACTION_READ_COMMITTED;
      case "createStatement", "prepareStatement" ->
          throw new AssertionError("no SQL may be sent to an unsupported database");
      default -> null;
    });
    DataSource dataSource = proxy(DataSource.class, (method, args) -> switch (method) {
      case "getConnection" -> connection;
      case "getLogWriter" -> (PrintWriter) null;
      case "getParentLogger" -> Logger.getGlobal();
      default -> null;
    });
    return new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("fake", new JdbcTransactionFactory(), dataSource)));
  }

  @FunctionalInterface
  private interface Answer {
    Object answer(String method, Object[] args);
  }

  private static <T> T proxy(Class<T> type, Answer answer) {
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
        (self, method, args) -> {
          if (method.getName().equals("toString")) {
            return "fake " + type.getSimpleName();
          }
          if (method.getName().equals("isWrapperFor")) {
            return false;
          }
          return answer.answer(method.getName(), args);
        }));
  }
}
