package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.MessageRun;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.annotations.Param;
import org.apache.ibatis.annotations.Select;
import org.apache.ibatis.session.ExecutorType;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Edges of a run ({@link MessageRun}, {@link MyBatisProcessedEventStore#openRun()}) beside {@link
 * TransactionRunIT}: what the announced message's own code throws while the current message
 * commits, a carried session the server ends between two messages, and a handler's mapper (its
 * session's local cache, each executor type) across two messages of one carried session. Real
 * PostgreSQL.
 */
class TransactionRunEdgesIT {
  private static final String APP = "transaction-run-edges-it";

  private static String schema;
  private static HikariDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    schema = StoreTests.newSchema("runedge");
    pool = StoreTests.pool(schema, APP, null, c -> c.setMaximumPoolSize(4));
    StoreTests.execute(pool, "CREATE TABLE effects (k text NOT NULL)", "CREATE TABLE mapped (k text NOT NULL)");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  private static final MessageHandler<SqlSession> APPLY = StoreTests.INSERT_KEY_INTO_EFFECTS;

  private static long effects(String key) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM effects WHERE k = '" + key + "'");
  }

  private static boolean marker(String key) {
    return store.isProcessed(new IdempotencyKey("classify", key, KeySource.HEADER));
  }

  private static long openTransactions(String applicationName) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
        + applicationName + "' AND state LIKE 'idle in transaction%'");
  }

  @Test
  void anErrorFromTheAnnouncedMessagesKeyExtractorIsNotTheCommittingMessagesFailure() throws Exception {
    // extractors must not throw; an Error still gets through the pipeline's guard (it catches
    // RuntimeException), and it belongs to the message whose key it is, never to the one before
    IdempotencyKeyExtractor header = IdempotencyKeyExtractor.header("idempotency-key");
    IdempotencyKeyExtractor poisoned = message -> {
      if (new String(message.payload(), java.nio.charset.StandardCharsets.UTF_8).contains("poison")) {
        throw new AssertionError("the extractor broke on this payload");
      }
      return header.extract(message);
    };
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store).consumerGroup("classify")
        .handler(APPLY).keyExtractor(poisoned)
        .retryPolicy(RetryPolicy.builder().maxAttempts(StoreTests.MAX_ATTEMPTS)
            .initialBackoff(Duration.ofMillis(10)).maxBackoff(Duration.ofMillis(10)).build())
        .build();
    String a = "poisoned-next-a-" + UUID.randomUUID();
    InboundMessage poison = StoreTests.message("poisoned-next-b-" + UUID.randomUUID(), "{\"poison\":1}", 1);
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    try (MessageRun run = pipeline.openRun()) {
      assertThat(run.process(StoreTests.message(a, "{}", 1), ack, () -> poison))
          .isEqualTo(ProcessingOutcome.PROCESSED);
    }
    assertThat(ack.calls).containsExactly("ack");
    assertThat(marker(a)).isTrue();
    assertThat(effects(a)).isEqualTo(1);
    assertThat(openTransactions(APP)).isZero();
  }

  @Test
  void aCarriedSessionTheServerEndsBetweenTwoMessagesIsNotTheNextHandlersAttempt() throws Exception {
    String app = APP + "-idle";
    // the server ends a session idle in a transaction for 300 ms: the carried one, between messages
    try (HikariDataSource ending = StoreTests.pool(schema, app, null,
        c -> c.setConnectionInitSql("SET idle_in_transaction_session_timeout = 300"))) {
      MyBatisProcessedEventStore on = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(ending))
          .build();
      IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(on, APPLY, false);
      String a = "ended-carry-a-" + UUID.randomUUID();
      String b = "ended-carry-b-" + UUID.randomUUID();
      InboundMessage next = StoreTests.message(b, "{}", 1);
      try (MessageRun run = pipeline.openRun()) {
        assertThat(run.process(StoreTests.message(a, "{}", 1), new RecordedAcknowledgement(), () -> next))
            .isEqualTo(ProcessingOutcome.PROCESSED);
        assertThat(openTransactions(app)).as("b's claim is carried").isEqualTo(1);
        await().atMost(Duration.ofSeconds(20)).until(() -> backends(app) == 0); // ended by the server
        RecordedAcknowledgement bAck = new RecordedAcknowledgement();
        ProcessingOutcome outcome = run.process(next, bAck, () -> null);
        assertThat(outcome).as("not the handler's failure: no attempt used")
            .isIn(ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY_TRANSACTION,
                ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
        if (outcome != ProcessingOutcome.PROCESSED) {
          assertThat(pipeline.process(next, new RecordedAcknowledgement())).isEqualTo(ProcessingOutcome.PROCESSED);
        }
      }
      assertThat(effects(a)).isEqualTo(1);
      assertThat(effects(b)).isEqualTo(1);
      assertThat(openTransactions(app)).isZero();
    }
  }

  /** The handler's mapper in the executor tests. */
  interface Mapped {
    @Select("SELECT count(*) FROM mapped")
    long count();

    @Insert("INSERT INTO mapped VALUES (#{k})")
    int add(@Param("k") String k);
  }

  @ParameterizedTest
  @EnumSource(value = ExecutorType.class, names = {"SIMPLE", "REUSE"}) // the builder refuses BATCH
  void aHandlersMapperSeesTheLastMessagesEffectAndItsWritesAreCommittedOnACarriedSession(ExecutorType executor)
      throws Exception {
    SqlSessionFactory sessions = MyBatisProcessedEventStoreIT.sessions(pool);
    sessions.getConfiguration().addMapper(Mapped.class);
    MyBatisProcessedEventStore on = MyBatisProcessedEventStore.builder(sessions).executorType(executor).build();
    StoreTests.execute(pool, "TRUNCATE mapped");
    List<Long> seen = new ArrayList<>();
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(on, (message, session) -> {
      Mapped mapped = session.getMapper(Mapped.class);
      seen.add(mapped.count()); // cached in the session's local cache: stale if kept across messages
      APPLY.handle(message, session); // written past MyBatis, which does not clear its cache for it
      try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO mapped VALUES ('raw')")) {
        ps.executeUpdate();
      }
      seen.add(mapped.count());
      mapped.add(message.header("idempotency-key"));
    }, false);
    List<String> keys = new ArrayList<>();
    List<InboundMessage> messages = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      keys.add("mapped-" + executor + "-" + i + "-" + UUID.randomUUID());
      messages.add(StoreTests.message(keys.get(i), "{}", 1));
    }
    try (MessageRun run = pipeline.openRun()) {
      for (int i = 0; i < messages.size(); i++) {
        InboundMessage next = i + 1 < messages.size() ? messages.get(i + 1) : null;
        assertThat(run.process(messages.get(i), new RecordedAcknowledgement(), () -> next))
            .isEqualTo(ProcessingOutcome.PROCESSED);
      }
    }
    // the second read of each message comes after its raw insert: the local cache holds the first
    // one within a message (MyBatis' own rule), never one from the message before
    assertThat(seen.get(0)).isEqualTo(0L);
    assertThat(seen.get(2)).as("the second message reads the first one's two rows").isEqualTo(2L);
    assertThat(seen.get(4)).as("the third message reads four rows").isEqualTo(4L);
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM mapped")).isEqualTo(6);
    for (String key : keys) {
      assertThat(marker(key)).as(key).isTrue();
      assertThat(effects(key)).as(key).isEqualTo(1);
    }
    assertThat(openTransactions(APP)).isZero();
  }

  private static long backends(String applicationName) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
        + applicationName + "'");
  }
}
