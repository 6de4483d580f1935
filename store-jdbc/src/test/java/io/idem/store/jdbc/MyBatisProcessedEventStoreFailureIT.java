package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ClaimResult;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** How the store reports database failures and misuse, on the real PostgreSQL. */
class MyBatisProcessedEventStoreFailureIT {
  private static HikariDataSource dataSource;
  private static SqlSessionFactory sessions;

  @BeforeAll
  static void setUp() {
    dataSource = PostgresFixture.shared().newSchema("store_failure");
    sessions = MyBatisProcessedEventStoreIT.sessions(dataSource);
  }

  @AfterAll
  static void tearDown() {
    dataSource.close();
  }

  private static byte[] sha(String text) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(text.getBytes());
  }

  private static IdempotencyKey key(String value) {
    return new IdempotencyKey("failure-it", value, KeySource.HEADER);
  }

  @Test
  void batchExecutorIsRefusedAtBuild() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).executorType(ExecutorType.BATCH).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("BATCH");
  }

  @Test
  void aClaimOnABatchSessionStillTellsADuplicate() throws Exception {
    // the claim is a query: its answer is the rows the INSERT returned, never a BATCH placeholder
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    try (SqlSession batch = sessions.openSession(ExecutorType.BATCH, false)) {
      assertThat(store.claim(batch, key("batch"), sha("p"))).isEqualTo(ClaimResult.CLAIMED);
      assertThat(store.claim(batch, key("batch"), sha("p"))).isEqualTo(ClaimResult.DUPLICATE);
      assertThat(store.claim(batch, key("batch"), sha("q"))).isEqualTo(ClaimResult.CONFLICT);
      batch.rollback(true);
    }
  }

  @Test
  void tableNameMustBeAnIdentifier() {
    for (String bad : new String[] {"events; DROP TABLE x", "a.b.c", "1table", "\"quoted\"", ""}) {
      assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName(bad).build())
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("tableName");
    }
  }

  @Test
  void customSchemaQualifiedTable() throws Exception {
    PostgresFixture.shared().createSchema("idem_custom_it");
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName("idem_custom_it.My_Events").createTableIfMissing(true).build();
    assertThat(store.tableName()).isEqualTo("idem_custom_it.my_events");
    assertThat(store.<ClaimResult>inTransaction(tx -> store.claim(tx, key("custom"), sha("p"))))
        .isIn(ClaimResult.CLAIMED, ClaimResult.DUPLICATE);
    assertThat(store.isProcessed(key("custom"))).isTrue();
  }

  @Test
  void theDefaultTableNameInAnotherSchemaIsCreated() throws Exception {
    // the index is named after the table: renaming both must not qualify the index name
    PostgresFixture.shared().createSchema("idem_default_name_it");
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName("idem_default_name_it.idem_processed_events").createTableIfMissing(true).build();
    assertThat(store.<ClaimResult>inTransaction(tx -> store.claim(tx, key("default-name"), sha("p"))))
        .isIn(ClaimResult.CLAIMED, ClaimResult.DUPLICATE);
    try (var c = dataSource.getConnection(); var st = c.createStatement();
        var rs = st.executeQuery("SELECT indexname FROM pg_indexes WHERE schemaname = 'idem_default_name_it'"
            + " AND tablename = 'idem_processed_events' ORDER BY indexname")) {
      java.util.List<String> names = new java.util.ArrayList<>();
      while (rs.next()) {
        names.add(rs.getString(1));
      }
      assertThat(names).contains("idem_processed_events_processed_at_idx");
    }
  }

  @Test
  void missingTableFailsAtBuildNotAtEveryMessage() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("no_such_table").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no_such_table does not exist")
        .hasMessageContaining("V1__processed_events.sql");
  }

  @Test
  void creatingATableInAMissingSchemaIsAConfigurationErrorNotAnOutage() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions)
            .tableName("idem_no_such_schema.events").createTableIfMissing(true).build())
        .isInstanceOf(IllegalStateException.class)
        .isNotInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("could not create idem_no_such_schema.events: ERROR: schema"
            + " \"idem_no_such_schema\" does not exist");
    assertThatThrownBy(() -> ProcessedEventsSchema.apply(dataSource, "idem_no_such_schema.events"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("schema \"idem_no_such_schema\" does not exist");
  }

  @Test
  void reservedWordTableNameFailsAtBuild() {
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("order").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tableName 'order'");
  }

  @Test
  void aTableThatIsNotIdemsFailsAtBuild() throws Exception {
    try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE IF NOT EXISTS not_idem (id int)");
    }
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions).tableName("not_idem").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not an Idem processed-events table");
  }

  @Test
  void aMissingTableAtRuntimeIsRetriedNotDuplicate() throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .tableName("dropped_later").createTableIfMissing(true).build();
    try (java.sql.Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE dropped_later");
    }
    // the store itself: the database's own error for the claim statement (42P01), not an outage
    assertThatThrownBy(() -> store.inTransaction(tx -> store.claim(tx, key("x"), sha("p"))))
        .isNotInstanceOf(StoreUnavailableException.class)
        .isNotInstanceOf(TransactionRetryException.class)
        .hasMessageContaining("dropped_later")
        .hasRootCauseInstanceOf(org.postgresql.util.PSQLException.class)
        .satisfies(e -> assertThat(((java.sql.SQLException) rootCause(e)).getSQLState()).isEqualTo("42P01"));
    // through a pipeline: a failing claim is never the message's fault (docs/FAILURES.md): retried
    // as a store outage, uncounted — never settled as a duplicate, the handler never ran
    java.util.concurrent.atomic.AtomicInteger handled = new java.util.concurrent.atomic.AtomicInteger();
    io.idem.IdempotentConsumer<SqlSession> pipeline =
        StoreTests.pipeline(store, (message, session) -> handled.incrementAndGet(), false);
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    io.idem.ProcessingOutcome outcome = pipeline.process(StoreTests.message("x", "p", 1), ack);
    assertThat(outcome).isEqualTo(io.idem.ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    assertThat(ack.calls).containsExactly("retryWhenStoreAvailable");
    assertThat(handled).hasValue(0);
  }

  private static Throwable rootCause(Throwable t) {
    Throwable cause = t;
    while (cause.getCause() != null && cause.getCause() != cause) {
      cause = cause.getCause();
    }
    return cause;
  }

  @Test
  void aConnectionTheServerEndedWhileTheDatabaseAnswersIsTheWorksFailure() throws Exception {
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
    assertThatThrownBy(() -> store.inTransaction(tx -> {
      store.claim(tx, key("killed"), sha("p"));
      int pid;
      try (Statement s = tx.getConnection().createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
        rs.next();
        pid = rs.getInt(1);
      }
      try (Connection admin = dataSource.getConnection();
          PreparedStatement ps = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
        ps.setInt(1, pid);
        ps.execute();
      }
      store.claim(tx, key("killed-2"), sha("p"));
      return null;
    })).isNotInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("terminat"); // the work's own failure, rethrown: a fresh connection works
    assertThat(store.isProcessed(key("killed"))).isFalse();
    // the pool recovers: the next transaction works
    assertThat(store.<ClaimResult>inTransaction(tx -> store.claim(tx, key("killed"), sha("p"))))
        .isEqualTo(ClaimResult.CLAIMED);
  }

  @Test
  void serializationFailureUnderRepeatableReadIsATransactionRetry() throws Exception {
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions)
        .isolation(TransactionIsolationLevel.REPEATABLE_READ).createTableIfMissing(true).build();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try {
      CountDownLatch claimed = new CountDownLatch(1);
      CountDownLatch secondStarted = new CountDownLatch(1);
      Future<ClaimResult> first = threads.submit(() -> store.inTransaction(tx -> {
        ClaimResult r = store.claim(tx, key("rr"), sha("p"));
        claimed.countDown();
        // the second took its snapshot: whether its claim then waits or not, the row it meets
        // was committed after that snapshot, which REPEATABLE READ reports as 40001
        secondStarted.await(10, TimeUnit.SECONDS);
        return r;
      }));
      claimed.await(10, TimeUnit.SECONDS);
      Future<Object> second = threads.submit(() -> {
        try {
          return store.inTransaction(tx -> {
            // take the snapshot before the first commits
            tx.getConnection().createStatement().execute("SELECT 1");
            secondStarted.countDown();
            return store.claim(tx, key("rr"), sha("p"));
          });
        } catch (Exception e) {
          return e;
        }
      });
      assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(ClaimResult.CLAIMED);
      Object outcome = second.get(10, TimeUnit.SECONDS);
      assertThat(outcome).isInstanceOf(TransactionRetryException.class);
      assertThat(((Exception) outcome)).hasMessageContaining("serialize");
    } finally {
      threads.shutdownNow();
    }
  }
}
