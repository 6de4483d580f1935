package io.idem.store.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.ibatis.session.SqlSession;

/**
 * A version-guarded upsert, the write of a naturally idempotent handler: one row per id, replaced
 * only by a strictly newer version, so that repeated and out-of-order events converge to the
 * newest state (docs/NATURAL-IDEMPOTENCY.md):
 *
 * <pre>{@code
 * INSERT INTO order_state (order_id, version, status) VALUES (?, ?, ?)
 * ON CONFLICT (order_id) DO UPDATE SET version = EXCLUDED.version, status = EXCLUDED.status
 * WHERE order_state.version < EXCLUDED.version
 * }</pre>
 *
 * <p>The table needs a primary key or unique constraint on the id column, and the version column
 * must grow with every change of the source (an aggregate version, a sequence number; not a
 * wall-clock time, which two writers can give the same value). An equal version is left alone,
 * so a redelivery of the current event changes nothing.
 *
 * <p>Build it once and share it: immutable and thread-safe; {@link #apply} runs on the handler's
 * {@code SqlSession}, in the pipeline's transaction.
 */
public final class VersionedUpsert {
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  private final String sql;
  private final List<String> order;

  private VersionedUpsert(String sql, List<String> order) {
    this.sql = sql;
    this.order = order;
  }

  /**
   * Starts an upsert into {@code table} ({@code table} or {@code schema.table}, unquoted
   * identifiers, checked by {@link Builder#build()}).
   */
  public static Builder into(String table) {
    return new Builder(table);
  }

  /**
   * Writes {@code values} unless the stored row has the same or a newer version.
   *
   * @param session the handler's session (the pipeline's transaction)
   * @param values one value per column of the upsert: the id, the version and every other column
   * @return {@code true} when the row was inserted or replaced, {@code false} when the stored
   *     version was the same or newer (a repeated or out-of-order event)
   * @throws IllegalArgumentException when {@code values} lacks a column or names another one
   * @throws SQLException as the database answers (the handler lets it propagate: the pipeline
   *     rolls back and retries)
   */
  public boolean apply(SqlSession session, Map<String, ?> values) throws SQLException {
    Objects.requireNonNull(values, "values");
    if (!values.keySet().equals(Set.copyOf(order))) {
      throw new IllegalArgumentException("values must have exactly the columns " + order
          + ", but had " + values.keySet());
    }
    Connection connection = session.getConnection();
    try (PreparedStatement statement = connection.prepareStatement(sql)) {
      for (int i = 0; i < order.size(); i++) {
        statement.setObject(i + 1, values.get(order.get(i)));
      }
      return statement.executeUpdate() == 1;
    }
  }

  /** The statement, with one {@code ?} per column in the order the builder named them. */
  public String sql() {
    return sql;
  }

  /** Builder of {@link VersionedUpsert}; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final String table;
    private String idColumn = "id";
    private String versionColumn = "version";
    private final Set<String> columns = new LinkedHashSet<>();

    private Builder(String table) {
      this.table = Objects.requireNonNull(table, "table");
    }

    /** The conflict column (primary key or unique); default {@code id}. */
    public Builder idColumn(String value) {
      this.idColumn = Objects.requireNonNull(value, "idColumn");
      return this;
    }

    /** The version column compared with {@code <}; default {@code version}. */
    public Builder versionColumn(String value) {
      this.versionColumn = Objects.requireNonNull(value, "versionColumn");
      return this;
    }

    /** The state columns replaced together with the version. */
    public Builder columns(String... values) {
      for (String each : values) {
        columns.add(Objects.requireNonNull(each, "column"));
      }
      return this;
    }

    /** @throws IllegalArgumentException naming the setting when a name is not an identifier */
    public VersionedUpsert build() {
      String target = TableName.of(table).qualified();
      identifier("idColumn", idColumn);
      identifier("versionColumn", versionColumn);
      columns.forEach(c -> identifier("columns", c));
      List<String> order = new ArrayList<>();
      order.add(idColumn);
      order.add(versionColumn);
      for (String c : columns) {
        if (!order.contains(c)) {
          order.add(c);
        }
      }
      String alias = target.contains(".") ? target.substring(target.indexOf('.') + 1) : target;
      String sql = "INSERT INTO " + target + " AS " + alias + " (" + String.join(", ", order)
          + ") VALUES (" + order.stream().map(c -> "?").collect(Collectors.joining(", "))
          + ") ON CONFLICT (" + idColumn + ") DO UPDATE SET "
          + order.subList(1, order.size()).stream().map(c -> c + " = EXCLUDED." + c)
              .collect(Collectors.joining(", "))
          + " WHERE " + alias + "." + versionColumn + " < EXCLUDED." + versionColumn;
      return new VersionedUpsert(sql, List.copyOf(order));
    }

    private static void identifier(String setting, String value) {
      if (!IDENTIFIER.matcher(value).matches()) {
        throw new IllegalArgumentException(setting + " must be an unquoted identifier"
            + " ([A-Za-z_][A-Za-z0-9_]*, at most 63 characters), but was '" + value + "'");
      }
    }
  }
}
