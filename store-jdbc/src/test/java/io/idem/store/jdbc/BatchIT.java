package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.BatchOrder;
import io.idem.BatchResult;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import io.idem.spi.ClaimResult;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Batch mode on the real PostgreSQL: the multi-row claim racing another session on one of its
 * keys (synchronised on pg_stat_activity, never on sleeps), and processBatch end to end.
 */
class BatchIT {
  private static String storeApp;
  private static HikariDataSource observer;
  private static HikariDataSource storePool;
  private static SqlSessionFactory sessions;
  private static MyBatisProcessedEventStore store;
  private static ExecutorService threads;

  @BeforeAll
  static void setUp() throws Exception {
    String schema = StoreTests.newSchema("batch");
    storeApp = "idem-batch-" + UUID.randomUUID().toString().substring(0, 8);
    observer = StoreTests.pool(schema, storeApp + "-observer", null, c -> {});
    storePool = StoreTests.pool(schema, storeApp, null, c -> {});
    StoreTests.execute(storePool, "CREATE TABLE effects (k text PRIMARY KEY)");
    sessions = MyBatisProcessedEventStoreIT.sessions(storePool);
    store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true)
        .claimLockTimeout(Duration.ZERO).build();
    threads = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void tearDown() {
    threads.shutdownNow();
    storePool.close();
    observer.close();
  }

  private static byte[] sha256(String payload) throws Exception {
    return MessageDigest.getInstance("SHA-256").digest(payload.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Another session claims the middle key with {@code theirPayload} and stays open; claimAll of
   * three keys (payload "mine") waits for it; then the other session commits or rolls back.
   */
  private static List<ClaimResult> raceOnTheMiddleKey(String theirPayload, boolean theyCommit) throws Exception {
    String run = UUID.randomUUID().toString();
    List<IdempotencyKey> keys = List.of(new IdempotencyKey("race", "a-" + run, KeySource.HEADER),
        new IdempotencyKey("race", "b-" + run, KeySource.HEADER),
        new IdempotencyKey("race", "c-" + run, KeySource.HEADER));
    byte[] mine = sha256("mine");
    try (SqlSession other = sessions.openSession(false)) {
      assertThat(store.claim(other, keys.get(1), sha256(theirPayload))).isEqualTo(ClaimResult.CLAIMED);
      Future<List<ClaimResult>> batch = threads.submit(() -> store.<List<ClaimResult>>inTransaction(
          tx -> store.claimAll(tx, keys, List.of(mine, mine, mine))));
      StoreTests.awaitLockWait(observer, storeApp);
      if (theyCommit) {
        other.commit(true);
      } else {
        other.rollback(true);
      }
      return batch.get(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aKeyCommittedWithAnotherPayloadDuringTheWaitIsAConflictTheRestClaimed() throws Exception {
    assertThat(raceOnTheMiddleKey("theirs", true))
        .containsExactly(ClaimResult.CLAIMED, ClaimResult.CONFLICT, ClaimResult.CLAIMED);
  }

  @Test
  void aKeyCommittedWithTheSamePayloadDuringTheWaitIsADuplicateTheRestClaimed() throws Exception {
    assertThat(raceOnTheMiddleKey("mine", true))
        .containsExactly(ClaimResult.CLAIMED, ClaimResult.DUPLICATE, ClaimResult.CLAIMED);
  }

  @Test
  void aKeyRolledBackDuringTheWaitIsClaimed() throws Exception {
    assertThat(raceOnTheMiddleKey("theirs", false)).containsOnly(ClaimResult.CLAIMED);
  }

  @Test
  void processBatchEndToEndAppliesOnceAndRedoesAFailingBatchInOrder() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    IdempotentConsumer<SqlSession> pipeline = StoreTests.pipeline(store, (message, session) -> {
      String key = message.header("idempotency-key");
      try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
        ps.setString(1, key);
        ps.executeUpdate();
      }
      if (key.startsWith("poison")) {
        throw new IllegalStateException("poison");
      }
    }, false);
    pipeline.process(StoreTests.message("dup-" + run, "{}", 1), new RecordedAcknowledgement());

    List<InboundMessage> batch = List.of(StoreTests.message("a-" + run, "{}", 1),
        StoreTests.message("dup-" + run, "{}", 1), StoreTests.message("dup-" + run, "{\"other\":1}", 1),
        InboundMessage.builder("orders", new byte[0]).build(), StoreTests.message("b-" + run, "{}", 1));
    List<RecordedAcknowledgement> acks = new ArrayList<>();
    batch.forEach(m -> acks.add(new RecordedAcknowledgement()));
    assertThat(pipeline.processBatch(batch, List.copyOf(acks))).containsExactly(ProcessingOutcome.PROCESSED,
        ProcessingOutcome.DUPLICATE, ProcessingOutcome.CONFLICT, ProcessingOutcome.DEAD_LETTERED,
        ProcessingOutcome.PROCESSED);
    assertThat(acks.stream().map(a -> a.calls).toList()).containsExactly(List.of("ack"), List.of("ack"),
        List.of("deadLetter:CONFLICT"), List.of("deadLetter:NO_KEY"), List.of("ack"));

    List<InboundMessage> failing = List.of(StoreTests.message("c-" + run, "{}", 1),
        StoreTests.message("poison-" + run, "{}", 1), StoreTests.message("d-" + run, "{}", 1));
    List<Acknowledgement> failingAcks = List.of(new RecordedAcknowledgement(), new RecordedAcknowledgement(),
        new RecordedAcknowledgement());
    BatchResult result = pipeline.processBatch(failing, failingAcks, BatchOrder.ORDERED);
    assertThat(result.outcomes()).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.RETRY);
    assertThat(result.stoppedAt()).isEqualTo(2);
    for (String k : List.of("a", "dup", "b", "c")) {
      assertThat(StoreTests.count(storePool, "SELECT count(*) FROM effects WHERE k = '" + k + "-" + run + "'"))
          .as(k).isEqualTo(1);
    }
    for (String k : List.of("poison", "d")) {
      assertThat(StoreTests.count(storePool, "SELECT count(*) FROM effects WHERE k = '" + k + "-" + run + "'"))
          .as(k).isZero();
    }
    assertThat(store.isProcessed(new IdempotencyKey("classify", "d-" + run, KeySource.HEADER))).isFalse();
  }
}
