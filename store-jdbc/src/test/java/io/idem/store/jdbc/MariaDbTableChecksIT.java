package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What {@code build()} refuses on MariaDB beyond PostgreSQL's checks, each from MariaDB's own
 * rules: key columns whose collation takes different keys for one (MariaDB's default utf8mb4
 * collations ignore case, accents and trailing spaces), a key column shorter than the longest key
 * (named with both lengths), and a session {@code sql_mode} that would truncate instead of
 * refusing. And the checks PostgreSQL has, answered from MariaDB's error codes.
 */
class MariaDbTableChecksIT {
  private static HikariDataSource pool;
  private static SqlSessionFactory sessions;

  @BeforeAll
  static void setUp() throws Exception {
    pool = MariaDbFixture.shared().newDatabase("table_checks");
    sessions = MyBatisProcessedEventStoreIT.sessions(pool);
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  private static String table(String name, String keyColumns) {
    return "CREATE TABLE " + name + " (" + keyColumns + ", key_source varchar(16) NOT NULL,"
        + " payload_sha256 varbinary(32) NOT NULL, processed_at datetime(6) NOT NULL DEFAULT"
        + " (UTC_TIMESTAMP(6)), PRIMARY KEY (consumer_group, idempotency_key))";
  }

  @Test
  void theScriptsTableIsAccepted() {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName("accepted").createTableIfMissing(true).build();
    assertThat(store.dialect()).isEqualTo(Dialect.MARIADB);
  }

  @Test
  void theScriptsRunAgainOnTheirOwnTablesAndFromADataSource() {
    ProcessedEventsSchema.apply(pool, "twice");
    ProcessedEventsSchema.apply(pool, "twice"); // IF NOT EXISTS throughout: nothing changes
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName("twice").createTableIfMissing(true).build();
    assertThat(store.dialect()).isEqualTo(Dialect.MARIADB);
  }

  @Test
  void aCaseInsensitiveKeyCollationIsRefused() throws Exception {
    StoreTests.execute(pool, table("ci_keys",
        "consumer_group varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL,"
            + " idempotency_key varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL"));
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("ci_keys").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("utf8mb4_general_ci")
        .hasMessageContaining("utf8mb4_nopad_bin");
  }

  @Test
  void aPadSpaceBinaryCollationIsRefused() throws Exception {
    // utf8mb4_bin compares 'k' and 'k ' as equal (PAD SPACE): two keys would be one
    StoreTests.execute(pool, table("pad_keys",
        "consumer_group varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
            + " idempotency_key varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"));
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("pad_keys").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("idempotency_key with collation utf8mb4_bin");
  }

  @Test
  void aKeyColumnShorterThanTheLongestKeyIsRefusedWithBothLengths() throws Exception {
    StoreTests.execute(pool, table("short_keys",
        "consumer_group varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,"
            + " idempotency_key varchar(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL"));
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("short_keys").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("idempotency_key holds at most 191 characters")
        .hasMessageContaining("up to 512");
  }

  @Test
  void aSessionSqlModeWithoutStrictIsRefused() {
    MyBatisProcessedEventStore.builder(sessions).tableName("strict").createTableIfMissing(true).build();
    MariaDbFixture mariadb = MariaDbFixture.shared();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(mariadb.jdbcUrl(database()));
    config.setUsername(mariadb.user());
    if (!mariadb.password().isEmpty()) {
      config.setPassword(mariadb.password());
    }
    config.setMaximumPoolSize(2);
    config.addDataSourceProperty("sessionVariables", "sql_mode='NO_ENGINE_SUBSTITUTION'");
    try (HikariDataSource lax = new HikariDataSource(config)) {
      assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(lax))
              .tableName("strict").build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("sql_mode is 'NO_ENGINE_SUBSTITUTION'")
          .hasMessageContaining("STRICT_TRANS_TABLES");
    }
  }

  @Test
  void aMissingTableIsNamed() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("no_such_table").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no_such_table does not exist");
  }

  @Test
  void aTableWithoutTheKeyIsRefused() throws Exception {
    StoreTests.execute(pool, "CREATE TABLE unkeyed (consumer_group varchar(128) NOT NULL,"
        + " idempotency_key varchar(512) NOT NULL, key_source varchar(16) NOT NULL,"
        + " payload_sha256 varbinary(32) NOT NULL, processed_at datetime(6) NOT NULL)");
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("unkeyed").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no PRIMARY KEY or UNIQUE");
  }

  private static String database() {
    return pool.getJdbcUrl().replaceAll(".*/([a-z0-9_]+)(\\?.*)?$", "$1");
  }
}
