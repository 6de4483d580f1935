package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.PostgresFixture;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.Test;

/**
 * A partition's records as a run (docs/DESIGN.md, "Runs"): each next claim travels with the
 * previous COMMIT and is carried, uncommitted, to the next record. Whatever ends a run early — a
 * retry on the record whose claim was carried, a rebalance to a member joining mid-stream with
 * {@code concurrency(2)}, the poll's time budget running out between two records — nothing is
 * lost or doubled, every retry counts one attempt, and no carried transaction outlives its run
 * (no session left idle in a transaction, no pooled connection kept). Runs are per-message mode's:
 * every consumer here sets {@code maxBatchSize(1)}. Real broker, real PostgreSQL.
 */
class KafkaRunsIT extends KafkaITSupport {

  @Override
  protected int partitions() {
    return 4;
  }

  @Test
  void retriesOnCarriedClaimsAndAMemberJoiningMidStreamLoseAndDoubleNothing() {
    int records = 240;
    for (int i = 0; i < records; i++) {
      publish(i % 4, "r-" + i, "{\"n\":" + i + "}");
    }
    Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    MessageHandler<SqlSession> failingOnce = (message, session) -> {
      String key = keyOf(message);
      int call = calls.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
      TestEffects.record(session, key, message.payload());
      Thread.sleep(5);
      if (Integer.parseInt(key.substring(2)) % 7 == 3 && call == 1) {
        throw new IllegalStateException("first attempt of " + key + " fails"); // its claim was carried
      }
    };
    UnaryOperator<KafkaConsumerConfig.Builder> settings = b -> b.maxBatchSize(1).concurrency(2).maxPollRecords(20)
        .consumerProperty("heartbeat.interval.ms", 100);
    start(failingOnce, settings);
    await().atMost(TIMEOUT).until(() -> effects.distinctKeys() >= 40);
    start(failingOnce, settings);
    await("all effects").atMost(TIMEOUT).until(() -> effects.distinctKeys() == records);
    awaitSettled();

    assertThat(effects.total()).isEqualTo(records);
    assertThat(effects.doubled()).isZero();
    long failing = calls.keySet().stream().filter(k -> Integer.parseInt(k.substring(2)) % 7 == 3).count();
    assertThat(outcomes.count(ProcessingOutcome.RETRY)).isEqualTo(failing);
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(records);
    assertThat(outcomes.count(ProcessingOutcome.RETRY_TRANSACTION)).isZero();
    assertThat(outcomes.settled()).filteredOn(s -> s.outcome() == ProcessingOutcome.PROCESSED)
        .allSatisfy(s -> assertThat(s.attempt()).isBetween(1, 2)); // 1 where a rebalance moved a retry
    assertNoCarriedTransactionLeft();
  }

  @Test
  void thePollsTimeBudgetRunningOutBetweenTwoRecordsReleasesTheCarriedClaim() {
    int records = 120;
    for (int i = 0; i < records; i++) {
      publish(0, "t-" + i, "{}");
    }
    MessageHandler<SqlSession> slow = (message, session) -> {
      TestEffects.record(session, keyOf(message), message.payload());
      Thread.sleep(40);
    };
    // budget: half of max.poll.interval.ms = 2 s, about 50 of a poll's 200 records. The other half
    // is the slack a loaded machine needs: a poll later than max.poll.interval.ms would leave the
    // group and redeliver (a DUPLICATE, which this test counts), whatever the budget did
    start(slow, b -> b.maxBatchSize(1).maxPollRecords(200).consumerProperty("max.poll.interval.ms", 4000));
    await("all effects").atMost(TIMEOUT).until(() -> effects.distinctKeys() == records);
    awaitSettled();
    assertThat(effects.total()).isEqualTo(records);
    assertThat(outcomes.count(ProcessingOutcome.PROCESSED)).isEqualTo(records);
    assertThat(outcomes.count(ProcessingOutcome.DUPLICATE)).isZero();
    assertNoCarriedTransactionLeft();
  }

  /**
   * Nothing idle in a transaction among the test's own sessions (its pool's application_name:
   * other test JVMs share the database), and the pool's connections all returned.
   */
  private void assertNoCarriedTransactionLeft() {
    await("no carried transaction left").atMost(TIMEOUT).until(() -> {
      try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
              + " AND application_name = ? AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()")) {
        ps.setString(1, PostgresFixture.applicationName(dataSource.getSchema()));
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1) == 0;
        }
      }
    });
    assertThat(dataSource.getHikariPoolMXBean().getActiveConnections()).isZero();
  }
}
