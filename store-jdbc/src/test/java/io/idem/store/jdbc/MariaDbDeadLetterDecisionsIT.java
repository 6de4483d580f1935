package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.DeadLetterCause;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.fixtures.MariaDbFixture;
import io.idem.spi.DeadLetterDecision;
import io.idem.store.jdbc.DeadLetterDecisions.Outcome;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The dead-letter tool's side on MariaDB ({@link DeadLetterDecisions}): it reads a key's marker,
 * releases exactly a {@code DEAD_LETTERED} one (and the key's attempt count), never a processed
 * one; a table without the decision columns has none, a missing one is named. {@link
 * DeadLetterActions} (the V7 table, MariaDB's script) records who did what, as on PostgreSQL, with
 * ids of the full 512 characters compared whole (the index holds a 256-character prefix).
 */
class MariaDbDeadLetterDecisionsIT {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() {
    dataSource = MariaDbFixture.shared().newDatabase("dead_letter_decisions");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(dataSource))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  @Test
  void releaseDeletesTheDecisionAndTheCountAndNeverAProcessedMarker() throws Exception {
    IdempotencyKey dead = new IdempotencyKey("billing", "order-1", KeySource.HEADER);
    IdempotencyKey processed = new IdempotencyKey("billing", "order-2", KeySource.PAYLOAD);
    assertThat(store.recordDeadLetter(dead, new DeadLetterDecision(DeadLetterCause.NON_RETRYABLE,
        "poison", "java.lang.IllegalStateException", "orders-0@7"))).isTrue();
    store.inTransaction(session -> store.claim(session, processed,
        MessageDigest.getInstance("SHA-256").digest("payload".getBytes(StandardCharsets.UTF_8))));
    store.startAttempt(dead); // a count a replay must not inherit
    DeadLetterDecisions decisions = DeadLetterDecisions.of(dataSource, "idem_processed_events");

    assertThat(decisions.marker("billing", "order-1"))
        .isEqualTo(new DeadLetterDecisions.Marker(Outcome.DEAD_LETTERED, KeySource.HEADER, "orders-0@7"));
    assertThat(decisions.marker("billing", "order-2"))
        .isEqualTo(new DeadLetterDecisions.Marker(Outcome.PROCESSED, KeySource.PAYLOAD, null));
    assertThat(decisions.marker("other-group", "order-1")).isNull();

    assertThat(decisions.release("billing", "order-2")).as("a processed marker stays").isFalse();
    assertThat(store.isProcessed(processed)).isTrue();
    assertThat(store.attempts(dead)).isEqualTo(1);
    assertThat(decisions.release("billing", "order-1")).isTrue();
    assertThat(decisions.marker("billing", "order-1")).isNull();
    assertThat(store.attempts(dead)).isZero();
    assertThat(decisions.release("billing", "order-1")).as("released once").isFalse();
  }

  @Test
  void aTableWithoutTheDecisionColumnsHasNoDecisionsAndAMissingTableIsNamed() throws Exception {
    StoreTests.execute(dataSource, ProcessedEventsMapper.readResource(
            Dialect.MARIADB.migrations() + "/V1__processed_events.sql")
        .replace("idem_processed_events_processed_at_idx", "old_events_processed_at_idx")
        .replace("idem_processed_events", "old_events"),
        "INSERT INTO old_events (consumer_group, idempotency_key, key_source, payload_sha256)"
            + " VALUES ('billing', 'k', 'HEADER', UNHEX(SHA2('x', 256)))");
    DeadLetterDecisions old = DeadLetterDecisions.of(dataSource, "old_events");
    assertThat(old.marker("billing", "k")).extracting(DeadLetterDecisions.Marker::outcome)
        .isEqualTo(Outcome.PROCESSED);
    assertThat(old.release("billing", "k")).isFalse();

    assertThatThrownBy(() -> DeadLetterDecisions.of(dataSource, "no_such_table").marker("g", "k"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("no_such_table does not exist");
  }

  @Test
  void deadLetterActionsAreRecordedAndLongIdsAreComparedWhole() {
    DeadLetterActions actions = DeadLetterDecisionsIT.actionsAreRecordedWithWhoAndWhy(dataSource,
        "idem-mariadb/V7__dead_letter_actions.sql");
    String prefix = "m".repeat(300);
    String first = prefix + "-a".repeat(106); // 512 characters
    String second = prefix + "-b".repeat(106);
    assertThat(first).hasSize(512);
    actions.record(new DeadLetterActions.Action(DeadLetterActions.Kind.DISCARDED, "sqs", "orders-dlq", first,
        null, null, null, null, "carol", null, null));
    assertThat(actions.settled("orders-dlq", java.util.List.of(first, second))).containsExactly(first);
    assertThat(actions.settled("orders-dlq", java.util.List.of(first + " "))).as("no PAD SPACE").isEmpty();
    assertThat(actions.history("orders-dlq", first, 5)).singleElement().satisfies(a -> assertThat(a.actedAt())
        .isBetween(java.time.Instant.now().minusSeconds(60), java.time.Instant.now().plusSeconds(1)));
  }
}
