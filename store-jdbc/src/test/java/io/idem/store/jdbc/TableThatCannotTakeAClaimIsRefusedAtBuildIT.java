package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.StoreUnavailableException;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Regression: build() checked the table's column names and key but not what the columns accept, so
 * a table every claim fails on (a key column too short, a fingerprint of the wrong type, a NOT NULL
 * column the claim does not fill) passed, and every message was then retried for ever as if the
 * database were down. build() now runs one claim the way the store claims, and rolls it back.
 */
class TableThatCannotTakeAClaimIsRefusedAtBuildIT {
  private static HikariDataSource dataSource;
  private static SqlSessionFactory sessions;

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("claim_probe");
    sessions = MyBatisProcessedEventStoreIT.sessions(dataSource);
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  /**
   * V1's columns and key, with the column {@code replacing} names (its first word) defined as
   * {@code replacing} says, and {@code extra} added; {@code ""} for neither.
   */
  private static void createTable(String table, String replacing, String extra) throws Exception {
    String columns = "consumer_group varchar(128) NOT NULL, idempotency_key varchar(512) NOT NULL,"
        + " key_source varchar(16) NOT NULL, payload_sha256 bytea NOT NULL,"
        + " processed_at timestamptz NOT NULL DEFAULT now()";
    String replaced = replacing.split(" ")[0];
    StringBuilder sql = new StringBuilder("CREATE TABLE ").append(table).append(" (");
    for (String column : columns.split(", ")) {
      sql.append(column.startsWith(replaced + " ") ? replacing : column).append(", ");
    }
    sql.append(extra.isEmpty() ? "" : extra + ", ").append("PRIMARY KEY (consumer_group, idempotency_key))");
    execute(sql.toString());
  }

  private static void execute(String sql) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private static long rows(String table) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static MyBatisProcessedEventStore build(String table) {
    return MyBatisProcessedEventStore.builder(sessions).tableName(table).build();
  }

  /** Refused at build, saying why ({@code reason}: the database's message, or what it did). */
  private static void assertRefused(String table, String reason) {
    assertThatThrownBy(() -> build(table)).as(table)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("processed-events table " + table + " cannot take a claim")
        .hasMessageContaining(reason)
        .hasMessageContaining(MyBatisProcessedEventStore.MIGRATION_RESOURCE);
  }

  @Test
  void aKeyColumnShorterThanTheLongestKeyIsRefused() throws Exception {
    createTable("short_key", "idempotency_key varchar(64) NOT NULL", "");
    assertRefused("short_key", "value too long for type character varying(64)");
  }

  @Test
  void shortGroupAndKeySourceColumnsAreRefused() throws Exception {
    createTable("short_group", "consumer_group varchar(64) NOT NULL", "");
    assertRefused("short_group", "value too long for type character varying(64)");
    createTable("short_source", "key_source varchar(8) NOT NULL", "");
    assertRefused("short_source", "value too long for type character varying(8)");
  }

  @Test
  void aFingerprintColumnOfAnotherTypeIsRefused() throws Exception {
    createTable("uuid_fingerprint", "payload_sha256 uuid NOT NULL", "");
    assertRefused("uuid_fingerprint", "column \"payload_sha256\" is of type uuid but expression is of type bytea");
    // text takes the bytes (an assignment cast to its hex text), but gives back other bytes: every
    // redelivery would be a conflict, never a duplicate
    createTable("text_fingerprint", "payload_sha256 text NOT NULL", "");
    assertRefused("text_fingerprint", "payload_sha256 does not give back the SHA-256 written to it"
        + " (it is text, not bytea)");
  }

  @Test
  void anExtraNotNullColumnWithoutDefaultIsRefused() throws Exception {
    createTable("with_tenant", "", "tenant_id text NOT NULL");
    assertRefused("with_tenant", "null value in column \"tenant_id\"");
  }

  @Test
  void processedAtWithoutDefaultIsRefused() throws Exception {
    createTable("no_default", "processed_at timestamptz NOT NULL", "");
    assertRefused("no_default", "null value in column \"processed_at\"");
  }

  @Test
  void aTriggerThatDiscardsTheClaimIsRefused() throws Exception {
    // every claim would insert nothing and every message would be skipped as a duplicate
    createTable("discarding", "", "");
    execute("CREATE FUNCTION discard() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END'");
    execute("CREATE TRIGGER discard BEFORE INSERT ON discarding FOR EACH ROW EXECUTE FUNCTION discard()");
    assertRefused("discarding", "the claim of a new key inserted no row");
  }

  @Test
  void aTransientFailureOfTheProbeIsAnOutage() throws Exception {
    createTable("serialization", "", "");
    execute("CREATE FUNCTION conflict() RETURNS trigger LANGUAGE plpgsql AS"
        + " 'BEGIN RAISE EXCEPTION ''could not serialize'' USING ERRCODE = ''40001''; END'");
    execute("CREATE TRIGGER conflict BEFORE INSERT ON serialization FOR EACH ROW EXECUTE FUNCTION conflict()");
    assertThatThrownBy(() -> build("serialization"))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("could not serialize");
  }

  @Test
  void theMigrationsTablePassesAndStaysEmpty() throws Exception {
    ProcessedEventsSchema.apply(dataSource, "real_table");
    assertThat(build("real_table")).isNotNull();
    assertThat(MyBatisProcessedEventStore.builder(sessions).tableName("real_table").isolation(null).build())
        .isNotNull();
    assertThat(rows("real_table")).isZero();
  }
}
