package io.idem.store.jdbc;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Typed reads of the {@code Map} rows MyBatis returns for {@code resultType="map"} statements: a
 * column the statement always selects is {@link #required}; one that may be SQL NULL is {@link
 * #optional}. A missing required column is a mismatch between the mapper and the code, reported
 * naming the column.
 */
final class Rows {
  private Rows() {}

  /**
   * The non-null value of {@code column}.
   *
   * @throws IllegalStateException when the row has no such column, or it is NULL
   * @throws ClassCastException when it is not a {@code type}
   */
  static <T> T required(Map<String, Object> row, String column, Class<T> type) {
    Object value = row.get(column);
    if (value == null) {
      throw new IllegalStateException("the statement's row has no value for column '" + column + "' (has "
          + row.keySet() + ")");
    }
    return type.cast(value);
  }

  /** The value of {@code column}, or {@code null} when it is NULL or absent. */
  static <T> @Nullable T optional(Map<String, Object> row, String column, Class<T> type) {
    return type.cast(row.get(column));
  }

  /** A numeric column as a {@code long} (drivers differ: Integer, Long, BigInteger, BigDecimal). */
  static long requiredLong(Map<String, Object> row, String column) {
    return required(row, column, Number.class).longValue();
  }
}
