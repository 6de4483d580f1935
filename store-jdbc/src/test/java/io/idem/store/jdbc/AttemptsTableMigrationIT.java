package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The attempts table ({@code V4__processed_events_attempts.sql}) beside a processed-events table
 * of an earlier version (V1 and V3 only): the store works without it, keeping no counts
 * ({@code startAttempt} answers 0), and createTableIfMissing adds {@code <table>_attempts} — for a
 * schema-qualified name too — after which counts are kept; a name too long for the suffix keeps
 * no counts instead of failing the build.
 */
class AttemptsTableMigrationIT {
  private static HikariDataSource dataSource;
  private static SqlSessionFactory sessions;
  private static final IdempotencyKey KEY = new IdempotencyKey("g", "k", KeySource.HEADER);

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("attempts_migration");
    sessions = MyBatisProcessedEventStoreIT.sessions(dataSource);
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  private static boolean exists(String table) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT to_regclass('" + table + "') IS NOT NULL")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private static void earlierVersion(String table) throws Exception {
    String sql = ProcessedEventsMapper.readResource(MyBatisProcessedEventStore.MIGRATION_RESOURCE) + ";"
        + ProcessedEventsMapper.readResource(MyBatisProcessedEventStore.DEAD_LETTERS_MIGRATION_RESOURCE);
    sql = sql.replace("idem_processed_events_processed_at_idx", table + "_processed_at_idx")
        .replace("idem_processed_events", table);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      for (String each : sql.split(";")) {
        String statement = each.lines().filter(l -> !l.strip().startsWith("--")).reduce("", (a, b) -> a + "\n" + b);
        if (!statement.isBlank()) {
          s.execute(statement);
        }
      }
    }
  }

  @Test
  void aTableWithoutTheAttemptsTableKeepsNoCountsUntilCreateTableIfMissingAddsIt() throws Exception {
    earlierVersion("v3_table");
    MyBatisProcessedEventStore old = MyBatisProcessedEventStore.builder(sessions).tableName("v3_table").build();
    assertThat(old.startAttempt(KEY)).as("no table: no counts").isZero();
    assertThat(old.attempts(KEY)).isZero();
    assertThat(exists("v3_table_attempts")).isFalse();

    MyBatisProcessedEventStore upgraded = MyBatisProcessedEventStore.builder(sessions).tableName("v3_table")
        .createTableIfMissing(true).build();
    assertThat(exists("v3_table_attempts")).isTrue();
    assertThat(upgraded.startAttempt(KEY)).isEqualTo(1);
    assertThat(upgraded.startAttempt(KEY)).isEqualTo(2);
    assertThat(upgraded.attempts(KEY)).isEqualTo(2);
    assertThat(MyBatisProcessedEventStore.builder(sessions).tableName("v3_table")
        .createTableIfMissing(true).build().attempts(KEY)).as("applied again: idempotent").isEqualTo(2);
  }

  @Test
  void aSchemaQualifiedTableGetsItsAttemptsTableInTheSameSchema() throws Exception {
    String schema = "billing_" + java.util.UUID.randomUUID().toString().substring(0, 8);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
    }
    try {
      MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
          .tableName(schema + ".processed").createTableIfMissing(true).build();
      assertThat(exists(schema + ".processed_attempts")).isTrue();
      assertThat(store.startAttempt(KEY)).isEqualTo(1);
    } finally {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA " + schema + " CASCADE");
      }
    }
  }

  @Test
  void aNameTooLongForTheSuffixKeepsNoCountsAndStillBuilds() throws Exception {
    String longest = "t".repeat(60); // + "_attempts" would be 69 characters, over PostgreSQL's 63
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName(longest).createTableIfMissing(true).build();
    assertThat(store.startAttempt(KEY)).isZero();
    io.idem.spi.ClaimResult claimed = store.inTransaction(tx -> store.claim(tx, KEY, new byte[32]));
    assertThat(claimed).isEqualTo(io.idem.spi.ClaimResult.CLAIMED);
  }
}
