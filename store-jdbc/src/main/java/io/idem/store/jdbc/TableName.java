package io.idem.store.jdbc;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A validated table name, {@code table} or {@code schema.table}: unquoted PostgreSQL identifiers
 * only ({@code [A-Za-z_][A-Za-z0-9_]*}, at most 63 characters each), so it can be written into SQL
 * text safely. PostgreSQL folds unquoted names to lower case; so does this class.
 */
record TableName(String qualified, String unqualified) {
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  static TableName of(String name) {
    String[] parts = name.split("\\.", -1);
    if (parts.length > 2 || !IDENTIFIER.matcher(parts[0]).matches()
        || (parts.length == 2 && !IDENTIFIER.matcher(parts[1]).matches())) {
      throw new IllegalArgumentException(
          "tableName must be an unquoted identifier or schema.identifier ([A-Za-z_][A-Za-z0-9_]*,"
              + " at most 63 characters each), but was '" + name + "'");
    }
    String lower = name.toLowerCase(Locale.ROOT);
    return new TableName(lower, parts.length == 2 ? parts[1].toLowerCase(Locale.ROOT) : lower);
  }

  /**
   * The name as the start-up statements take it: {@code table} (qualified, PostgreSQL's
   * {@code to_regclass}), {@code schema} (the part before the dot, or {@code null}: MariaDB's
   * current database) and {@code name} (the unqualified part).
   */
  Map<String, Object> params() {
    Map<String, Object> params = new HashMap<>();
    params.put("table", qualified);
    params.put("schema", qualified.equals(unqualified)
        ? null : qualified.substring(0, qualified.length() - unqualified.length() - 1));
    params.put("name", unqualified);
    return params;
  }
}
