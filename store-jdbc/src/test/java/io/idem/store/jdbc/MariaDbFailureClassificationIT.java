package io.idem.store.jdbc;

import static io.idem.store.jdbc.StoreTests.execute;
import static io.idem.store.jdbc.StoreTests.message;
import static io.idem.store.jdbc.StoreTests.pipeline;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.MariaDbFixture;
import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The pipeline's outcomes on MariaDB (docs/FAILURES.md): a new message is processed and its
 * redelivery is a duplicate; the database rejecting the handler's statement is the handler's
 * failure (here an integrity violation, dead-lettered at once by a policy that does not retry
 * them, the decision recorded); a handler statement that waits past {@code innodb_lock_wait_timeout} (1205)
 * is a transaction retry (not counted), with nothing committed either way.
 */
class MariaDbFailureClassificationIT {
  private static HikariDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    pool = MariaDbFixture.shared().newDatabase("classify");
    execute(pool, "CREATE TABLE effects (k varchar(600) PRIMARY KEY)",
        "CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL)", "INSERT INTO counters VALUES (1, 0)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  private record Run(ProcessingOutcome outcome, List<String> calls) {}

  private static Run run(MessageHandler<SqlSession> handler, String key, int attempt) {
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = pipeline(store, handler, false).process(message(key, "{}", attempt), ack);
    return new Run(outcome, ack.calls);
  }

  private static boolean marker(String key) {
    return store.isProcessed(new IdempotencyKey("classify", key, KeySource.HEADER));
  }

  private static long effects(String key) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k LIKE '" + key + "%'");
  }

  @Test
  void aNewMessageIsProcessedAndItsRedeliveryIsADuplicate() throws Exception {
    String key = "new-" + UUID.randomUUID();
    AtomicInteger calls = new AtomicInteger();
    MessageHandler<SqlSession> handler = (m, session) -> {
      calls.incrementAndGet();
      execute(session, "INSERT INTO effects VALUES ('" + key + "')");
    };
    assertThat(run(handler, key, 1).outcome()).isEqualTo(ProcessingOutcome.PROCESSED);
    Run again = run(handler, key, 2);
    assertThat(again.outcome()).isEqualTo(ProcessingOutcome.DUPLICATE);
    assertThat(again.calls()).containsExactly("ack");
    assertThat(calls).hasValue(1);
    assertThat(effects(key)).isEqualTo(1);
  }

  @Test
  void aStatementTheDatabaseRejectsIsTheHandlersFailure() throws Exception {
    String key = "rejected-" + UUID.randomUUID();
    MessageHandler<SqlSession> handler = (m, session) -> {
      execute(session, "INSERT INTO effects VALUES ('" + key + "')");
      execute(session, "INSERT INTO effects VALUES ('" + key + "')"); // 1062 in the business table
    };
    Run run = run(handler, key, 1);
    // SQLSTATE 23000, an integrity violation: not retried by this policy (retryIntegrityViolations
    // false), dead-lettered at once; the decision is recorded on the key's marker
    assertThat(run.outcome()).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(run.calls()).containsExactly("deadLetter:NON_RETRYABLE");
    assertThat(marker(key)).isFalse();
    assertThat(store.deadLetterDecision(new IdempotencyKey("classify", key, KeySource.HEADER))).isNotNull();
    assertThat(effects(key)).isZero();
  }

  @Test
  void aHandlerLockWaitPastTheTimeoutIsATransactionRetry() throws Exception {
    String key = "waits-" + UUID.randomUUID();
    AtomicInteger calls = new AtomicInteger();
    MessageHandler<SqlSession> handler = (m, session) -> {
      calls.incrementAndGet();
      execute(session, "INSERT INTO effects VALUES ('" + key + "')");
      // the handler's own bound (1 s), for this statement only: 1205 when another transaction holds the row
      execute(session, "SET STATEMENT innodb_lock_wait_timeout = 1 FOR UPDATE counters SET n = n + 1 WHERE id = 1");
    };
    try (Connection holder = pool.getConnection(); Statement s = holder.createStatement()) {
      holder.setAutoCommit(false);
      s.execute("UPDATE counters SET n = n + 1 WHERE id = 1");
      Run run = run(handler, key, 1);
      assertThat(run.outcome()).isEqualTo(ProcessingOutcome.RETRY_TRANSACTION);
      assertThat(run.outcome().countsAsAttempt()).isFalse();
      assertThat(run.calls()).containsExactly("retryWhenStoreAvailable");
      holder.rollback();
    }
    assertThat(calls).hasValue(1);
    assertThat(marker(key)).isFalse();
    assertThat(effects(key)).isZero();
    assertThat(run(handler, key, 1).outcome()).isEqualTo(ProcessingOutcome.PROCESSED);
  }
}
