package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.store.jdbc.VersionedUpsert;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Natural idempotency through real Kafka and PostgreSQL: the events of one order arrive as
 * versions 3, 1, 2 and 3 again (the last a redelivery of the first, same key). A version-guarded
 * upsert converges to version 3 with one row, with or without the processed-events marker; a
 * counter does not converge without the marker, which is why it must keep it.
 */
class NaturallyIdempotentHandlerIT extends KafkaITSupport {
  private static final VersionedUpsert ORDER_STATE = VersionedUpsert.into("order_state")
      .idColumn("order_id").versionColumn("version").columns("status").build();
  private static final List<String> DELIVERIES =
      List.of("o-1@3|o-1|3|SHIPPED", "o-1@1|o-1|1|CREATED", "o-1@2|o-1|2|PAID", "o-1@3|o-1|3|SHIPPED");

  private final AtomicInteger applied = new AtomicInteger();

  @BeforeEach
  void tables() throws Exception {
    sql("CREATE TABLE order_state (order_id text PRIMARY KEY, version bigint NOT NULL, status text NOT NULL)");
    sql("CREATE TABLE order_events_seen (order_id text PRIMARY KEY, n int NOT NULL)");
    sql("INSERT INTO order_events_seen VALUES ('o-1', 0)");
    for (String each : DELIVERIES) {
      String[] parts = each.split("\\|");
      publish(0, parts[0], parts[1] + "|" + parts[2] + "|" + parts[3]);
    }
  }

  @Test
  void versionGuardedUpsertConvergesWithoutMarkers() throws Exception {
    consume(true, (message, session) -> {
      String[] p = fields(message);
      if (ORDER_STATE.apply(session, Map.of("order_id", p[0], "version", Long.parseLong(p[1]), "status", p[2]))) {
        applied.incrementAndGet();
      }
    });

    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(4); // no duplicate without a marker
    assertThat(query("SELECT order_id || ':' || version || ':' || status FROM order_state"))
        .isEqualTo("o-1:3:SHIPPED");
    assertThat(query("SELECT count(*) FROM order_state")).isEqualTo("1");
    assertThat(applied).hasValue(1); // versions 1, 2 and the repeated 3 were older or equal
    assertThat(query("SELECT count(*) FROM idem_processed_events")).isEqualTo("0");
  }

  @Test
  void versionGuardedUpsertConvergesWithMarkersToo() throws Exception {
    consume(false, (message, session) -> {
      String[] p = fields(message);
      ORDER_STATE.apply(session, Map.of("order_id", p[0], "version", Long.parseLong(p[1]), "status", p[2]));
    });

    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(3);
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isEqualTo(1);
    assertThat(query("SELECT order_id || ':' || version || ':' || status FROM order_state"))
        .isEqualTo("o-1:3:SHIPPED");
    assertThat(query("SELECT count(*) FROM idem_processed_events")).isEqualTo("3");
  }

  @Test
  void aCounterWithoutMarkersCountsTheRedeliveryTwice() throws Exception {
    consume(true, NaturallyIdempotentHandlerIT::count);

    // three distinct events, four deliveries: without the marker the redelivery is counted again
    assertThat(query("SELECT n FROM order_events_seen")).isEqualTo("4");
  }

  @Test
  void aCounterWithMarkersCountsEachEventOnce() throws Exception {
    consume(false, NaturallyIdempotentHandlerIT::count);

    assertThat(query("SELECT n FROM order_events_seen")).isEqualTo("3");
  }

  private static void count(InboundMessage message, SqlSession session) throws Exception {
    try (Statement s = session.getConnection().createStatement()) {
      s.executeUpdate("UPDATE order_events_seen SET n = n + 1 WHERE order_id = 'o-1'");
    }
  }

  private void consume(boolean naturallyIdempotent, MessageHandler<SqlSession> handler) {
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler(handler)
        .retryPolicy(retryPolicy())
        .naturallyIdempotent(naturallyIdempotent)
        .listener(outcomes)
        .build();
    start(pipeline, b -> b);
    awaitSettled();
    assertThat(outcomes.settled()).hasSize(DELIVERIES.size());
  }

  private static String[] fields(InboundMessage message) {
    return new String(message.payload(), StandardCharsets.UTF_8).split("\\|");
  }

  private void sql(String statement) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private String query(String select) throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(select)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
