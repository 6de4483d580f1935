package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.Statement;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Regression: build() only read consumer_group and idempotency_key, so a table without Idem's
 * other columns, or without the key that ON CONFLICT needs, passed and failed on every message.
 */
class TableShapeIsVerifiedAtBuildIT {
  private static final String COLUMNS = "consumer_group varchar(128) NOT NULL,"
      + " idempotency_key varchar(512) NOT NULL, key_source varchar(16) NOT NULL,"
      + " payload_sha256 bytea NOT NULL, processed_at timestamptz NOT NULL DEFAULT now()";

  private static HikariDataSource dataSource;
  private static SqlSessionFactory sessions;

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("table_shape");
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

  private static MyBatisProcessedEventStore build(String table) {
    return MyBatisProcessedEventStore.builder(sessions).tableName(table).build();
  }

  @Test
  void theRightColumnsWithoutAKeyAreRefused() throws Exception {
    execute("CREATE TABLE no_key (" + COLUMNS + ")");
    assertThatThrownBy(() -> build("no_key"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no_key has no PRIMARY KEY or UNIQUE constraint on exactly"
            + " (consumer_group, idempotency_key)")
        .hasMessageContaining(MyBatisProcessedEventStore.MIGRATION_RESOURCE);
  }

  @Test
  void aKeyOnOtherColumnsOrAPartialOrDeferrableOneIsRefused() throws Exception {
    execute("CREATE TABLE wide_key (" + COLUMNS + ", PRIMARY KEY (consumer_group, idempotency_key, key_source))");
    execute("CREATE TABLE partial_key (" + COLUMNS + ")");
    execute("CREATE UNIQUE INDEX ON partial_key (consumer_group, idempotency_key) WHERE key_source <> ''");
    execute("CREATE TABLE deferred_key (" + COLUMNS + ", UNIQUE (consumer_group, idempotency_key) DEFERRABLE)");
    for (String table : new String[] {"wide_key", "partial_key", "deferred_key"}) {
      assertThatThrownBy(() -> build(table)).as(table)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("has no PRIMARY KEY or UNIQUE constraint");
    }
  }

  @Test
  void onlyTheTwoKeyColumnsAreRefusedNamingTheMissingOnes() throws Exception {
    execute("CREATE TABLE two_columns (consumer_group text, idempotency_key text,"
        + " PRIMARY KEY (consumer_group, idempotency_key))");
    assertThatThrownBy(() -> build("two_columns"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("two_columns exists but is not an Idem processed-events table")
        .hasMessageContaining("no column key_source, payload_sha256, processed_at")
        .hasMessageContaining(MyBatisProcessedEventStore.MIGRATION_RESOURCE);
  }

  @Test
  void theMigrationsSchemaPassesQualifiedOrNot() throws Exception {
    ProcessedEventsSchema.apply(dataSource, "real_schema");
    assertThat(build("real_schema").tableName()).isEqualTo("real_schema");
    assertThat(build(dataSource.getSchema() + ".real_schema").tableName())
        .isEqualTo(dataSource.getSchema() + ".real_schema");
    // a unique index in either column order, with INCLUDE columns, is an arbiter too
    execute("CREATE TABLE unique_index (" + COLUMNS + ")");
    execute("CREATE UNIQUE INDEX ON unique_index (idempotency_key, consumer_group) INCLUDE (processed_at)");
    assertThat(build("unique_index")).isNotNull();
  }

  @Test
  void aTableInAnotherSchemaIsNotTakenForTheOneNamed() throws Exception {
    // to_regclass resolves like the store's statements do: the name on the search_path only
    ProcessedEventsSchema.apply(dataSource, "elsewhere_only");
    PostgresFixture.shared().createSchema("idem_table_shape_other");
    assertThatThrownBy(() -> build("idem_table_shape_other.elsewhere_only"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("idem_table_shape_other.elsewhere_only does not exist");
  }
}
