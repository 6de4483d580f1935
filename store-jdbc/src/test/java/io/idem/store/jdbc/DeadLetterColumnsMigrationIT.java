package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ClaimResult;
import io.idem.spi.DeadLetterDecision;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The dead-letter decision columns ({@code V3__processed_events_dead_letters.sql}) on a table of
 * an earlier version: the store works without them (recording nothing), createTableIfMissing adds
 * them to the existing table keeping its rows as processed, and a table with only some of them is
 * refused at build.
 */
class DeadLetterColumnsMigrationIT {
  private static HikariDataSource dataSource;
  private static SqlSessionFactory sessions;

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("dead_letter_columns");
    sessions = MyBatisProcessedEventStoreIT.sessions(dataSource);
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  private static void execute(String sql) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static String v1(String table) {
    return ProcessedEventsMapper.readResource(MyBatisProcessedEventStore.MIGRATION_RESOURCE)
        .replace("idem_processed_events_processed_at_idx", table + "_processed_at_idx")
        .replace("idem_processed_events", table);
  }

  private static byte[] sha256(String text) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  private static final DeadLetterDecision DECISION = new DeadLetterDecision(
      DeadLetterCause.NON_RETRYABLE, "handler failed with a non-retryable error on attempt 1: poison",
      "io.idem.NonRetryableException", "orders-0@7");

  @Test
  void aTableOfVersion1WorksWithoutDecisionsThenCreateTableIfMissingAddsTheColumns() throws Exception {
    for (String sql : v1("v1_table").split(";")) {
      String statement = sql.lines().filter(l -> !l.strip().startsWith("--")).reduce("", (a, b) -> a + "\n" + b);
      if (!statement.isBlank()) {
        execute(statement);
      }
    }
    IdempotencyKey done = new IdempotencyKey("g", "done", KeySource.HEADER);
    IdempotencyKey dead = new IdempotencyKey("g", "dead", KeySource.HEADER);

    MyBatisProcessedEventStore old = MyBatisProcessedEventStore.builder(sessions).tableName("v1_table").build();
    ClaimResult claimed = old.inTransaction(tx -> old.claim(tx, done, sha256("p")));
    assertThat(claimed).isEqualTo(ClaimResult.CLAIMED);
    assertThat(old.recordDeadLetter(dead, DECISION)).as("no columns: nothing recorded").isFalse();
    assertThat(old.deadLetterDecision(dead)).isNull();
    assertThat(old.isProcessed(done)).isTrue();
    assertThat(old.isProcessed(dead)).isFalse();

    MyBatisProcessedEventStore upgraded = MyBatisProcessedEventStore.builder(sessions).tableName("v1_table")
        .createTableIfMissing(true).build();
    assertThat(upgraded.isProcessed(done)).as("the existing row is a processed one").isTrue();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT outcome FROM v1_table WHERE idempotency_key = 'done'")) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo("PROCESSED");
    }
    assertThat(upgraded.recordDeadLetter(dead, DECISION)).isTrue();
    assertThat(upgraded.deadLetterDecision(dead)).isEqualTo(DECISION);
    assertThat(upgraded.isProcessed(dead)).isFalse();
    assertThat(upgraded.recordDeadLetter(done, DECISION)).as("a processed marker stays").isFalse();
    assertThat(upgraded.deadLetterDecision(done)).isNull();
  }

  @Test
  void aTableWithOnlySomeOfTheColumnsIsRefused() throws Exception {
    for (String sql : v1("partial_dl").split(";")) {
      String statement = sql.lines().filter(l -> !l.strip().startsWith("--")).reduce("", (a, b) -> a + "\n" + b);
      if (!statement.isBlank()) {
        execute(statement);
      }
    }
    execute("ALTER TABLE partial_dl ADD COLUMN outcome varchar(16) NOT NULL DEFAULT 'PROCESSED'");
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("partial_dl").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only some of the dead-letter decision columns")
        .hasMessageContaining("dead_letter_cause")
        .hasMessageContaining(MyBatisProcessedEventStore.DEAD_LETTERS_MIGRATION_RESOURCE);
  }
}
