package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.PostgresFixture;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * With the application's own Flyway (Spring Boot's, its migrations in {@code db/migration/app}),
 * Idem's table comes from Idem's migration run with a Flyway and history table of its own, after
 * the application's: each history holds only its own migrations.
 */
@SpringBootTest(classes = FlywaySchemaIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retention.enabled=false",
    "spring.flyway.enabled=true",
    "spring.flyway.locations=classpath:db/migration/app"})
class FlywaySchemaIT {
  @Autowired JdbcTemplate jdbc;

  @Test
  void idemMigratesWithAHistoryOfItsOwnAfterTheApplication() {
    assertThat(jdbc.queryForList("SELECT script FROM flyway_schema_history WHERE success"
        + " AND version IS NOT NULL", String.class)).containsExactly("V1__orders.sql");
    List<String> idem = jdbc.queryForList("SELECT script FROM " + IdemFlyway.HISTORY_TABLE
        + " WHERE success AND type = 'SQL'", String.class);
    assertThat(idem).startsWith("V1__processed_events.sql").doesNotContain("V1__orders.sql");
    assertThat(jdbc.queryForObject("SELECT count(*) FROM idem_processed_events", Integer.class)).isZero();
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    DataSource dataSource() {
      return PostgresFixture.shared().newSchemaDataSource("spring_flyway");
    }
  }
}
