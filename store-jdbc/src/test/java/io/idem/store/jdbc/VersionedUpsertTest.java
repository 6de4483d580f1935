package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The statement {@link VersionedUpsert} writes, and the names it refuses. */
class VersionedUpsertTest {

  @Test
  void theStatementReplacesTheRowOnlyForANewerVersion() {
    VersionedUpsert upsert = VersionedUpsert.into("app.Order_State").idColumn("order_id")
        .versionColumn("rev").columns("status", "amount").build();
    assertThat(upsert.sql()).isEqualTo("INSERT INTO app.order_state AS order_state"
        + " (order_id, rev, status, amount) VALUES (?, ?, ?, ?)"
        + " ON CONFLICT (order_id) DO UPDATE SET rev = EXCLUDED.rev, status = EXCLUDED.status,"
        + " amount = EXCLUDED.amount WHERE order_state.rev < EXCLUDED.rev");
  }

  @Test
  void namesThatAreNotIdentifiersAreRefusedNamingTheSetting() {
    assertThatThrownBy(() -> VersionedUpsert.into("t").columns("status; DROP TABLE t").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("columns must be an unquoted identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63"
            + " characters), but was 'status; DROP TABLE t'");
    assertThatThrownBy(() -> VersionedUpsert.into("t").idColumn("1id").build())
        .hasMessageStartingWith("idColumn must be an unquoted identifier");
    assertThatThrownBy(() -> VersionedUpsert.into("a.b.c").build())
        .hasMessageStartingWith("tableName must be an unquoted identifier");
  }
}
