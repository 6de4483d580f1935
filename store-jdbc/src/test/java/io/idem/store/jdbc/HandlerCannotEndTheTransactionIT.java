package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.ibatis.annotations.Update;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Regression: a handler that swallows a database error, or ends the transaction itself, must never
 * get its message acknowledged as processed. (PostgreSQL's driver returns normally from commit()
 * on an aborted transaction and rolls back instead, so trusting the commit would ack a message
 * whose effect and marker were both lost.)
 */
class HandlerCannotEndTheTransactionIT {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("handler_guard");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE effects (k text PRIMARY KEY)");
      s.execute("INSERT INTO effects VALUES ('taken')");
    }
    SqlSessionFactory sessions = MyBatisProcessedEventStoreIT.sessions(dataSource);
    sessions.getConfiguration().addMapper(TransactionEnder.class);
    store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  private static ProcessingOutcome run(String key, MessageHandler<SqlSession> handler, RecordedAcknowledgement ack) {
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup("guard")
        .handler(handler)
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(10))
            .maxBackoff(Duration.ofMillis(10)).build())
        .build();
    InboundMessage message = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).build();
    return pipeline.process(message, ack);
  }

  private static void insert(SqlSession session, String key) throws SQLException {
    try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
    }
  }

  private static int effects(String key) throws SQLException {
    return effects(dataSource, key);
  }

  /** Rows of {@code effects (k text PRIMARY KEY)} with {@code key}. */
  static int effects(DataSource dataSource, String key) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM effects WHERE k = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }

  private static boolean marker(String key) {
    return store.isProcessed(new IdempotencyKey("guard", key, KeySource.HEADER));
  }

  @Test
  void aSwallowedDatabaseErrorIsAFailureNotAProcessedMessage() throws Exception {
    String key = "swallow-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = run(key, (message, session) -> {
      try {
        insert(session, "taken"); // unique violation: PostgreSQL aborts the transaction
      } catch (Exception swallowed) {
        // a handler bug: carries on as if nothing happened
      }
    }, ack);
    assertThat(outcome).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(ack.calls).containsExactly("retry");
    assertThat(marker(key)).isFalse();
  }

  @Test
  void aHandlerCannotCommitPartOfItsWork() throws Exception {
    String key = "commit-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = run(key, (message, session) -> {
      insert(session, key);
      session.commit(); // would commit the marker with half the work
      throw new IllegalStateException("second half fails");
    }, ack);
    assertThat(outcome).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(marker(key)).isFalse();
    assertThat(effects(key)).isZero();
  }

  @Test
  void aHandlerCannotRollBackOrEndTheTransactionThroughTheConnection() throws Exception {
    for (String how : List.of("rollback", "session-rollback", "autocommit", "close")) {
      String key = how + "-" + UUID.randomUUID();
      RecordedAcknowledgement ack = new RecordedAcknowledgement();
      ProcessingOutcome outcome = run(key, (message, session) -> {
        insert(session, key);
        switch (how) {
          case "rollback" -> session.getConnection().rollback();
          case "session-rollback" -> session.rollback(true);
          case "autocommit" -> session.getConnection().setAutoCommit(true);
          default -> session.close();
        }
      }, ack);
      assertThat(outcome).as(how).isEqualTo(ProcessingOutcome.RETRY);
      assertThat(ack.calls).as(how).containsExactly("retry");
      assertThat(marker(key)).as(how).isFalse();
      assertThat(effects(key)).as(how).isZero();
    }
  }

  /** A mapper a handler could (wrongly) use to end the transaction by SQL text. */
  public interface TransactionEnder {
    @Update("COMMIT")
    void commit();

    @Update("END")
    void end();

    @Update("ROLLBACK")
    void rollback();
  }

  private static void end(SqlSession session, String how) throws SQLException {
    TransactionEnder ender = session.getMapper(TransactionEnder.class);
    switch (how) {
      case "mapper COMMIT" -> ender.commit();
      case "mapper END" -> ender.end();
      case "mapper ROLLBACK" -> ender.rollback();
      default -> {
        try (Statement s = session.getConnection().createStatement()) {
          s.execute(how.substring("statement ".length()));
        }
      }
    }
  }

  private static final List<String> ENDINGS = List.of("mapper COMMIT", "mapper END", "mapper ROLLBACK",
      "statement COMMIT", "statement END", "statement ROLLBACK");

  @Test
  void aSqlTextEndOfTheTransactionThenANormalReturnIsAHandlerFailureWithNoMarkerLeft() throws Exception {
    for (String how : ENDINGS) {
      String key = "sql-end-" + UUID.randomUUID();
      RecordedAcknowledgement ack = new RecordedAcknowledgement();
      ProcessingOutcome outcome = run(key, (message, session) -> {
        insert(session, key);
        end(session, how); // pgjdbc is idle now: the claim check sees it without a round trip
      }, ack);
      assertThat(outcome).as(how).isEqualTo(ProcessingOutcome.RETRY);
      assertThat(outcome.countsAsAttempt()).as(how).isTrue();
      assertThat(ack.calls).as(how).containsExactly("retry");
      assertThat(marker(key)).as(how).isFalse();
    }
  }

  @Test
  void aSqlTextEndThenMoreStatementsIsCaughtAtTheCommitWithNoMarkerLeft() throws Exception {
    for (String how : ENDINGS) {
      String key = "sql-end-more-" + UUID.randomUUID();
      RecordedAcknowledgement ack = new RecordedAcknowledgement();
      ProcessingOutcome outcome = run(key, (message, session) -> {
        insert(session, key);
        end(session, how);
        insert(session, key + "-after"); // pgjdbc silently began a new transaction: state OPEN
      }, ack);
      assertThat(outcome).as(how).isEqualTo(ProcessingOutcome.RETRY);
      assertThat(ack.calls).as(how).containsExactly("retry");
      assertThat(marker(key)).as(how).isFalse();
      assertThat(effects(key + "-after")).as(how + ": the new transaction rolled back").isZero();
    }
  }

  @Test
  void aSqlTextCommitThenAThrowRemovesTheEarlyCommittedMarker() throws Exception {
    for (String how : List.of("mapper COMMIT", "mapper END", "statement COMMIT")) {
      String key = "sql-commit-throw-" + UUID.randomUUID();
      RecordedAcknowledgement ack = new RecordedAcknowledgement();
      ProcessingOutcome outcome = run(key, (message, session) -> {
        insert(session, key);
        end(session, how); // marker and effect committed here
        throw new IllegalStateException("fails after committing early");
      }, ack);
      assertThat(outcome).as(how).isEqualTo(ProcessingOutcome.RETRY);
      assertThat(ack.calls).as(how).containsExactly("retry");
      assertThat(marker(key)).as(how + ": the early marker is removed before the retry").isFalse();
    }
    // and the retry is applied, not skipped as a duplicate
    String key = "sql-commit-retry-" + UUID.randomUUID();
    run(key, (message, session) -> {
      end(session, "mapper COMMIT");
      throw new IllegalStateException("first attempt");
    }, new RecordedAcknowledgement());
    RecordedAcknowledgement retried = new RecordedAcknowledgement();
    assertThat(run(key, (message, session) -> insert(session, key), retried))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(marker(key)).isTrue();
  }

  @Test
  void mapperCallsAndSavepointsStillWork() throws Exception {
    String key = "savepoint-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = run(key, (message, session) -> {
      Connection c = session.getConnection();
      java.sql.Savepoint sp = c.setSavepoint();
      try {
        insert(session, "taken");
      } catch (SQLException expected) {
        c.rollback(sp); // the handler recovers properly: the transaction is usable again
      }
      insert(session, key);
    }, ack);
    assertThat(outcome).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(ack.calls).containsExactly("ack");
    assertThat(marker(key)).isTrue();
    assertThat(effects(key)).isEqualTo(1);
  }

  @Test
  void anErrorFromTheHandlerIsAHandlerFailure() throws Exception {
    String key = "error-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    ProcessingOutcome outcome = run(key, (message, session) -> {
      insert(session, key);
      throw new AssertionError("a bug");
    }, ack);
    assertThat(outcome).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(marker(key)).isFalse();
    assertThat(effects(key)).isZero();
    RecordedAcknowledgement last = new RecordedAcknowledgement();
    InboundMessage third = InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", key).deliveryAttempt(3).build();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup("guard")
        .handler((m, s) -> {
          throw new StackOverflowError();
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).build()).build();
    assertThat(pipeline.process(third, last)).isEqualTo(ProcessingOutcome.DEAD_LETTERED);
    assertThat(last.calls).containsExactly("deadLetter:MAX_ATTEMPTS_EXCEEDED");
  }
}
