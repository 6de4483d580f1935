package io.idem.examples;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.VersionedUpsert;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;

/**
 * The README's natural-idempotency example (docs/NATURAL-IDEMPOTENCY.md): a handler that only sets
 * state, through a version-guarded upsert, so repeated and out-of-order {@code OrderStatusChanged}
 * events ({@code {"orderId": "o-1", "version": 3, "status": "SHIPPED"}}) converge to the newest
 * version. Its only write converges by itself, so the pipeline may skip the processed-events marker
 * ({@code naturallyIdempotent(true)}); a counter, an insert without a unique key, an outbox row or a
 * call outside the database would need the marker.
 */
public final class OrderStates {
  private static final ObjectMapper JSON = new ObjectMapper();

  private OrderStates() {}

  /** The state table: the upsert needs a primary key (or unique constraint) on the id. */
  public static void createTableIfMissing(DataSource dataSource) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS order_state (order_id text PRIMARY KEY,"
          + " version bigint NOT NULL, status text NOT NULL)");
    }
  }

  /** The event's {@code order_id}, {@code version} and {@code status}, by column. */
  static Map<String, Object> columns(InboundMessage message) throws IOException {
    JsonNode event = JSON.readTree(message.payload());
    return Map.of("order_id", event.get("orderId").asText(), "version", event.get("version").asLong(),
        "status", event.get("status").asText());
  }

  /** The pipeline keeping {@code order_state} at each order's newest version. */
  public static IdempotentConsumer<SqlSession> pipeline(MyBatisProcessedEventStore store) {
    // README: begin
    VersionedUpsert orderState = VersionedUpsert.into("order_state")
        .idColumn("order_id").versionColumn("version").columns("status").build();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup("order-state")
        .naturallyIdempotent(true)     // no marker: safe only because every write is a guarded upsert
        .handler((message, session) -> orderState.apply(session, columns(message)))  // false: stale or repeated
        .build();
    // README: end
    return pipeline;
  }
}
