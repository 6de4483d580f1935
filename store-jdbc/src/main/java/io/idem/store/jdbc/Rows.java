package io.idem.store.jdbc;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
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

  /**
   * A time column as an instant: PostgreSQL's {@code timestamptz} read as an {@link
   * OffsetDateTime}, MariaDB's UTC {@code DATETIME(6)} as a {@link LocalDateTime} (a UTC wall-clock
   * time); {@code null} when it is NULL or absent.
   */
  static @Nullable Instant optionalInstant(Map<String, Object> row, String column) {
    Object value = row.get(column);
    if (value instanceof LocalDateTime utc) {
      return utc.toInstant(ZoneOffset.UTC);
    }
    return value == null ? null : ((OffsetDateTime) value).toInstant();
  }

  /** {@link #optionalInstant}, which must not be NULL. */
  static Instant requiredInstant(Map<String, Object> row, String column) {
    required(row, column, Object.class);
    Instant value = optionalInstant(row, column);
    if (value == null) {
      throw new IllegalStateException("column '" + column + "' is NULL");
    }
    return value;
  }
}
