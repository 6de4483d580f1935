package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.DeadLetterDecision;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;

/**
 * The docs/STORE.md Flyway set-up, on the real PostgreSQL: Idem's V1 under {@code db/migration/idem}
 * collides with an application's own V1 when one Flyway scans all of {@code db/migration}, and
 * runs cleanly with a Flyway (and history table) of its own.
 */
class FlywayBesideTheApplicationsMigrationsIT {

  @Test
  void oneFlywayOverAllOfDbMigrationFindsTwoVersionOnes() {
    try (HikariDataSource ds = PostgresFixture.shared().newSchema("flyway_one")) {
      assertThatThrownBy(() -> Flyway.configure().dataSource(ds).load().migrate())
          .isInstanceOf(FlywayException.class)
          .hasMessageContaining("Found more than one migration with version 1");
    }
  }

  @Test
  void idemsOwnFlywayAndHistoryTableBesideTheApplications() {
    try (HikariDataSource ds = PostgresFixture.shared().newSchema("flyway_two")) {
      // the application first, so that Idem's Flyway meets a schema that is not empty
      Flyway.configure().dataSource(ds).locations("classpath:db/migration/app").load().migrate();
      Flyway.configure().dataSource(ds)
          .locations("classpath:db/migration/idem")
          .table("idem_schema_history")
          .baselineOnMigrate(true)
          .baselineVersion("0") // the default baseline, 1, would skip Idem's V1 in a non-empty schema
          .load()
          .migrate();
      MyBatisProcessedEventStore store =
          MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(ds)).build();
      assertThat(store.tableName()).isEqualTo(MyBatisProcessedEventStore.DEFAULT_TABLE);
      // V3 ran too: the store records dead-letter decisions
      IdempotencyKey key = new IdempotencyKey("flyway", "dead", KeySource.HEADER);
      assertThat(store.recordDeadLetter(key, new DeadLetterDecision(
          DeadLetterCause.NON_RETRYABLE, "poison", null, "q@1"))).isTrue();
      assertThat(store.deadLetterDecision(key)).isNotNull();
    }
  }
}
