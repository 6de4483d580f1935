package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.DeadLetterDecision;
import io.idem.store.jdbc.DeadLetterActions.Action;
import io.idem.store.jdbc.DeadLetterActions.Kind;
import io.idem.store.jdbc.DeadLetterDecisions.Outcome;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the dead-letter tool does in the store: {@link DeadLetterDecisions} releases exactly a
 * key's {@code DEAD_LETTERED} marker (whatever delivery it was recorded for) and never a processed
 * one, and reads the key source; {@link DeadLetterActions} keeps who did what, and which dead
 * letters are settled.
 */
class DeadLetterDecisionsIT {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("dead_letter_decisions");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(dataSource))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  @Test
  void releaseDeletesTheDecisionWhateverDeliveryItWasRecordedForAndNeverAProcessedMarker() throws Exception {
    IdempotencyKey dead = new IdempotencyKey("billing", "order-1", KeySource.HEADER);
    IdempotencyKey processed = new IdempotencyKey("billing", "order-2", KeySource.PAYLOAD);
    assertThat(store.recordDeadLetter(dead, new DeadLetterDecision(DeadLetterCause.NON_RETRYABLE,
        "poison", "java.lang.IllegalStateException", "orders-0@7"))).isTrue();
    store.inTransaction(session -> store.claim(session, processed, sha256("payload")));
    DeadLetterDecisions decisions = DeadLetterDecisions.of(dataSource, "idem_processed_events");

    assertThat(decisions.marker("billing", "order-1"))
        .isEqualTo(new DeadLetterDecisions.Marker(Outcome.DEAD_LETTERED, KeySource.HEADER, "orders-0@7"));
    assertThat(decisions.marker("billing", "order-2"))
        .isEqualTo(new DeadLetterDecisions.Marker(Outcome.PROCESSED, KeySource.PAYLOAD, null));
    assertThat(decisions.marker("other-group", "order-1")).isNull();

    assertThat(decisions.release("billing", "order-2")).as("a processed marker stays").isFalse();
    assertThat(store.isProcessed(processed)).isTrue();
    assertThat(decisions.release("billing", "order-1")).isTrue();
    assertThat(decisions.marker("billing", "order-1")).isNull();
    assertThat(store.deadLetterDecision(dead)).isNull();
    assertThat(decisions.release("billing", "order-1")).as("released once").isFalse();
  }

  @Test
  void aTableWithoutTheDecisionColumnsHasNoDecisionsAndAMissingTableIsNamed() throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(ProcessedEventsMapper.readResource(MyBatisProcessedEventStore.MIGRATION_RESOURCE)
          .replace("idem_processed_events_processed_at_idx", "old_events_processed_at_idx")
          .replace("idem_processed_events", "old_events"));
      s.execute("INSERT INTO old_events (consumer_group, idempotency_key, key_source, payload_sha256)"
          + " VALUES ('billing', 'k', 'HEADER', sha256('x'))");
    }
    DeadLetterDecisions old = DeadLetterDecisions.of(dataSource, "old_events");
    assertThat(old.marker("billing", "k")).extracting(DeadLetterDecisions.Marker::outcome).isEqualTo(Outcome.PROCESSED);
    assertThat(old.release("billing", "k")).isFalse();

    assertThatThrownBy(() -> DeadLetterDecisions.of(dataSource, "no_such_table").marker("g", "k"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no_such_table does not exist");
    assertThatThrownBy(() -> DeadLetterDecisions.of(dataSource, "bad-name"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bad-name");
  }

  @Test
  void actionsAreRecordedWithWhoAndWhyAndOnlyReplaysAndDiscardsSettleADeadLetter() {
    actionsAreRecordedWithWhoAndWhy(dataSource, "V7__dead_letter_actions.sql");
  }

  /**
   * {@link DeadLetterActions} on {@code dataSource}'s database (MariaDbDeadLetterDecisionsIT runs it
   * on MariaDB): a missing table is named with {@code script}; creating it is idempotent; who did
   * what is kept; only replays and discards settle a dead letter; the history newest first.
   */
  static DeadLetterActions actionsAreRecordedWithWhoAndWhy(javax.sql.DataSource dataSource, String script) {
    assertThatThrownBy(() -> DeadLetterActions.builder(dataSource).tableName("missing_actions").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("missing_actions does not exist").hasMessageContaining(script);
    DeadLetterActions actions = DeadLetterActions.builder(dataSource).createTableIfMissing(true).build();
    DeadLetterActions.builder(dataSource).createTableIfMissing(true).build(); // idempotent

    actions.record(new Action(Kind.DISCARDED, "kafka", "orders.DLT", "orders.DLT-0@1", "billing", "order-1",
        "NON_RETRYABLE", null, "alice", "test order, never real", null));
    actions.record(new Action(Kind.COPIED, "kafka", "orders.DLT", "orders.DLT-0@2", "billing", "order-2",
        "NON_RETRYABLE", "orders", "bob", null, null));
    actions.record(new Action(Kind.REPLAYED, "kafka", "orders.DLT", "orders.DLT-0@3", "billing", "order-3",
        "NON_RETRYABLE", "orders", "bob", null, null));

    assertThat(actions.settled("orders.DLT", List.of("orders.DLT-0@1", "orders.DLT-0@2", "orders.DLT-0@3",
        "orders.DLT-0@4"))).containsExactlyInAnyOrder("orders.DLT-0@1", "orders.DLT-0@3");
    assertThat(actions.settled("payments.DLT", List.of("orders.DLT-0@1"))).isEmpty();
    List<Action> history = actions.history("orders.DLT", "orders.DLT-0@1", 10);
    assertThat(history).singleElement().satisfies(a -> {
      assertThat(a.kind()).isEqualTo(Kind.DISCARDED);
      assertThat(a.operator()).isEqualTo("alice");
      assertThat(a.reason()).isEqualTo("test order, never real");
      assertThat(a.actedAt()).isNotNull();
    });
    assertThat(actions.history("orders.DLT", null, 2)).extracting(Action::deadLetterId)
        .containsExactly("orders.DLT-0@3", "orders.DLT-0@2");
    return actions;
  }

  private static byte[] sha256(String text) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }
}
