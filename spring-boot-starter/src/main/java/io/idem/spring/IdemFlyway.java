package io.idem.spring;

import io.idem.store.jdbc.Dialect;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;

/**
 * Idem's migration ({@code classpath:db/migration/idem}, on MariaDB {@code
 * classpath:db/migration/idem-mariadb}: {@link Dialect#migrations()}) through a Flyway and history table of its
 * own ({@value #HISTORY_TABLE}), as docs/STORE.md ("With Flyway") does by hand: baselined at 0 so
 * that on a schema the application's Flyway already filled, Idem's V1 still runs. The
 * application's Flyway must not scan {@code db/migration/idem} (Spring Boot's default location
 * {@code classpath:db/migration} does, sub-folders included: set {@code spring.flyway.locations}
 * to a folder of the application's own). Only loaded when Flyway is on the classpath.
 */
final class IdemFlyway {
  static final String HISTORY_TABLE = "idem_schema_history";

  private IdemFlyway() {}

  static void migrate(DataSource dataSource, Dialect dialect) {
    Flyway.configure(IdemFlyway.class.getClassLoader())
        .dataSource(dataSource)
        .locations("classpath:" + dialect.migrations())
        .table(HISTORY_TABLE)
        .baselineOnMigrate(true)
        .baselineVersion("0")
        .load()
        .migrate();
  }
}
