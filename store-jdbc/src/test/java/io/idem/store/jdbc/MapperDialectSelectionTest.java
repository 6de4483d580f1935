package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.ibatis.mapping.MappedStatement;
import org.apache.ibatis.session.Configuration;
import org.junit.jupiter.api.Test;

/**
 * The store's statements per database, chosen by MyBatis' databaseId rule applied by the store
 * itself: the database's own statement replaces the shared one of the same id, the other
 * database's are left out, and the application's {@code Configuration.databaseId} is neither
 * needed nor changed.
 */
class MapperDialectSelectionTest {

  private static MappedStatement statement(Configuration configuration, String namespace, String id) {
    return configuration.getMappedStatement(namespace + "." + id, false);
  }

  @Test
  void eachDatabaseGetsItsOwnClaimAndSharesTheRest() {
    Configuration postgres = new Configuration();
    Configuration mariadb = new Configuration();
    mariadb.setDatabaseId("the-applications-own-id");
    TableName table = TableName.of("billing.events");
    String pg = ProcessedEventsMapper.register(postgres, table, Dialect.POSTGRESQL);
    String maria = ProcessedEventsMapper.register(mariadb, table, Dialect.MARIADB);

    assertThat(statement(postgres, pg, "claim").getBoundSql(null).getSql()).contains("ON CONFLICT");
    assertThat(statement(mariadb, maria, "claim").getBoundSql(null).getSql())
        .contains("INSERT INTO billing.events").doesNotContain("ON CONFLICT");
    assertThat(statement(mariadb, maria, "fingerprint").getBoundSql(null).getSql()).contains("LOCK IN SHARE MODE");
    assertThat(statement(postgres, pg, "fingerprint").getBoundSql(null).getSql()).doesNotContain("LOCK IN SHARE MODE");
    // PostgreSQL's own statements are not registered for MariaDB, and MariaDB's not for PostgreSQL
    assertThat(statement(mariadb, maria, "claimAll").getBoundSql(java.util.Map.of("rows", java.util.List.of()))
        .getSql()).contains("INSERT IGNORE").doesNotContain("unnest");
    assertThat(statement(postgres, pg, "claimAll").getBoundSql(null).getSql()).contains("unnest");
    assertThat(postgres.hasStatement(pg + ".keyCollations", false)).isFalse();
    // shared statements are there for both
    assertThat(statement(postgres, pg, "exists").getBoundSql(null).getSql())
        .isEqualTo(statement(mariadb, maria, "exists").getBoundSql(null).getSql());
    assertThat(mariadb.getDatabaseId()).isEqualTo("the-applications-own-id");
    assertThat(postgres.getDatabaseId()).isNull();
  }

  @Test
  void theSelectionFollowsMyBatisRule() {
    String xml = """
        <?xml version="1.0" encoding="UTF-8" ?>
        <!DOCTYPE mapper PUBLIC "-//mybatis.org//DTD Mapper 3.0//EN" "https://mybatis.org/dtd/mybatis-3-mapper.dtd">
        <mapper namespace="n">
          <select id="a" resultType="int">SELECT 1</select>
          <select id="a" databaseId="mariadb" resultType="int">SELECT 2</select>
          <select id="b" databaseId="postgresql" resultType="int">SELECT 3</select>
          <select id="c" resultType="int">SELECT 4 WHERE 1 &lt; 2</select>
        </mapper>
        """;
    String chosen = ProcessedEventsMapper.forDatabase(xml, "mariadb");
    assertThat(chosen).contains("SELECT 2").contains("SELECT 4 WHERE 1 &lt; 2")
        .doesNotContain("SELECT 1").doesNotContain("SELECT 3").doesNotContain("databaseId")
        .contains("-//mybatis.org//DTD Mapper 3.0//EN");
    assertThat(ProcessedEventsMapper.forDatabase(xml, "postgresql"))
        .contains("SELECT 1").contains("SELECT 3").doesNotContain("SELECT 2");
  }
}
