package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.MariaDbFixture;
import io.idem.store.jdbc.Dialect;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Which database the starter's store runs on, read from the application's DataSource: MariaDB
 * with Idem's own Flyway migration from {@code db/migration/idem-mariadb}, and a database Idem
 * does not support refused at start-up, naming it and the supported ones, before any SQL is sent
 * (Flyway's included). The MariaDB listener tests are {@link MariaDbDropInIT} and {@link MariaDbOutboxIT}.
 */
class IdemDatabasesIT {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withPropertyValues("idem.retention.enabled=false", "idem.outbox.enabled=false")
      .withConfiguration(BootLines.autoConfigurations(BootLines.DATA_SOURCE,
          BootLines.DATA_SOURCE_TRANSACTION_MANAGER, BootLines.TRANSACTION))
      .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class));

  @Test
  void onMariaDbIdemsFlywayMigrationRunsTheMariaDbScripts() {
    MariaDbFixture mariaDb = MariaDbFixture.shared();
    String database = "spring_flyway_" + UUID.randomUUID().toString().substring(0, 8);
    mariaDb.createDatabase(database);
    runner.withBean(DataSource.class, () -> mariaDb.dataSource(database, 4))
        .withPropertyValues("idem.schema=flyway")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(SpringTransactionStore.class).delegate().dialect()).isEqualTo(Dialect.MARIADB);
          JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
          assertThat(jdbc.queryForList("SELECT script FROM " + IdemFlyway.HISTORY_TABLE
              + " WHERE success AND type = 'SQL' ORDER BY installed_rank", String.class))
              .startsWith("V1__processed_events.sql");
          assertThat(jdbc.queryForObject("SELECT count(*) FROM idem_processed_events", Integer.class)).isZero();
        });
  }

  /**
   * The outbox on MariaDB with Idem's Flyway: its table from the MariaDB scripts, and {@link
   * IdemOutbox} in a Spring transaction telling keys apart exactly (a trailing space, a case
   * difference: other keys), a second row for a (destination, key) refused with the transaction
   * going on.
   */
  @Test
  void onMariaDbTheOutboxTableComesFromIdemsFlywayAndKeysCompareExactly() {
    MariaDbFixture mariaDb = MariaDbFixture.shared();
    String database = "spring_outbox_" + UUID.randomUUID().toString().substring(0, 8);
    mariaDb.createDatabase(database);
    runner.withBean(DataSource.class, () -> mariaDb.dataSource(database, 4))
        .withPropertyValues("idem.schema=flyway", "idem.outbox.enabled=true")
        .run(context -> {
          assertThat(context).hasNotFailed();
          IdemOutbox outbox = context.getBean(IdemOutbox.class);
          org.springframework.transaction.support.TransactionTemplate transactions =
              new org.springframework.transaction.support.TransactionTemplate(
                  context.getBean(org.springframework.transaction.PlatformTransactionManager.class));
          byte[] payload = "receipt".getBytes(java.nio.charset.StandardCharsets.UTF_8);
          java.util.List<Boolean> written = transactions.execute(status -> java.util.stream.Stream.of("k", "k ", "K", "k")
              .map(key -> outbox.enqueue(new io.idem.store.jdbc.OutboxEntry(key, "receipts", null, payload, java.util.Map.of())))
              .toList());
          assertThat(written).containsExactly(true, true, true, false);
          JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
          assertThat(jdbc.queryForList("SELECT concat('[', idempotency_key, ']') FROM idem_outbox ORDER BY id", String.class))
              .containsExactly("[k]", "[k ]", "[K]");
        });
  }

  @Test
  void aDatabaseIdemDoesNotSupportIsRefusedAtStartUpNamingItAndTheSupportedOnes() {
    // Spring logs the refused context at WARN as it fails: expected here
    ch.qos.logback.classic.Logger spring =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.springframework.context");
    ch.qos.logback.classic.Level level = spring.getLevel();
    spring.setLevel(ch.qos.logback.classic.Level.ERROR);
    try {
      for (String schema : new String[] {"auto", "flyway"}) {
        runner.withBean(DataSource.class, () -> database("H2", "2.2.224 (2023-09-17)"))
            .withPropertyValues("idem.schema=" + schema)
            .run(context -> assertThat(context).getFailure().rootCause()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not a database Idem supports")
                .hasMessageContaining("H2 2.2.224 (2023-09-17)")
                .hasMessageContaining("PostgreSQL 12+, MariaDB 10.6+"));
      }
    } finally {
      spring.setLevel(level);
    }
  }

  /** A data source whose connections' metadata names {@code product}; no statement may be sent. */
  private static DataSource database(String product, String version) {
    DatabaseMetaData metadata = proxy(DatabaseMetaData.class, method -> switch (method) {
      case "getDatabaseProductName" -> product;
      case "getDatabaseProductVersion" -> version;
      case "getDatabaseMajorVersion", "getDatabaseMinorVersion" -> 2;
      case "getURL" -> "jdbc:h2:mem:idem";
      default -> null;
    });
    Connection connection = proxy(Connection.class, method -> switch (method) {
      case "getMetaData" -> metadata;
      case "getAutoCommit", "isClosed" -> false;
      case "createStatement", "prepareStatement", "prepareCall" ->
          throw new AssertionError("no SQL may be sent to an unsupported database");
      default -> null;
    });
    return proxy(DataSource.class, method -> method.equals("getConnection") ? connection : null);
  }

  @SuppressWarnings("unchecked")
  private static <T> T proxy(Class<T> type, java.util.function.Function<String, Object> answer) {
    return (T) Proxy.newProxyInstance(IdemDatabasesIT.class.getClassLoader(), new Class<?>[] {type},
        (self, method, args) -> switch (method.getName()) {
          case "toString" -> type.getSimpleName() + " of " + "an unsupported database";
          case "hashCode" -> System.identityHashCode(self);
          case "equals" -> self == args[0];
          case "unwrap" -> null;
          case "isWrapperFor" -> false;
          default -> answer.apply(method.getName());
        });
  }
}
