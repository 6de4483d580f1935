package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RetentionJob} on the real MariaDB: only expired markers (processed_at in UTC) go, in
 * bounded batches; a batch whose purge lock (MariaDB's named lock, the connection's) another
 * instance holds yields without waiting; expired attempt counts go too; the oldest marker's age
 * is read in UTC.
 */
class MariaDbRetentionJobIT {
  private HikariDataSource pool;
  private MyBatisProcessedEventStore store;

  @BeforeEach
  void setUp() {
    pool = MariaDbFixture.shared().newDatabase("retention");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
  }

  @AfterEach
  void tearDown() {
    pool.close();
  }

  /** {@code rows} markers of group {@code group}, processed {@code daysAgo} days ago (UTC). */
  private void markers(String group, int rows, int daysAgo) throws Exception {
    StoreTests.execute(pool, "INSERT INTO idem_processed_events"
        + " (consumer_group, idempotency_key, key_source, payload_sha256, processed_at)"
        + " SELECT '" + group + "', CONCAT('k-', seq), 'HEADER', UNHEX(REPEAT('00', 32)),"
        + " UTC_TIMESTAMP(6) - INTERVAL " + daysAgo + " DAY - INTERVAL seq MICROSECOND"
        + " FROM seq_1_to_" + rows);
  }

  private long count(String where) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM idem_processed_events WHERE " + where);
  }

  private RetentionJob.Builder job(RetentionListener listener) {
    return RetentionJob.builder(store).retention(Duration.ofDays(7)).batchSize(200).minPause(Duration.ZERO)
        .pauseRatio(0).listener(listener);
  }

  @Test
  void purgesOnlyExpiredMarkersInBoundedBatches() throws Exception {
    markers("old", 450, 8);
    markers("fresh", 30, 6);
    RetentionJobIT.Recorder recorder = new RetentionJobIT.Recorder();
    try (RetentionJob job = job(recorder).build()) {
      assertThat(job.purgeExpired()).isEqualTo(450);
    }
    assertThat(recorder.batches).containsExactly(200, 200, 50);
    assertThat(recorder.yields).containsExactly(false);
    assertThat(count("consumer_group = 'old'")).isZero();
    assertThat(count("consumer_group = 'fresh'")).isEqualTo(30);
    assertThat(recorder.oldest).isBetween(Duration.ofDays(6), Duration.ofDays(6).plusHours(1));
  }

  @Test
  void aBatchYieldsWhileAnotherInstanceHoldsThePurgeLock() throws Exception {
    markers("old", 10, 8);
    RetentionJobIT.Recorder recorder = new RetentionJobIT.Recorder();
    try (RetentionJob job = job(recorder).build()) {
      // a connection of its own, not the pool's: another instance's session
      MariaDbFixture mariadb = MariaDbFixture.shared();
      String database = pool.getJdbcUrl().replaceAll(".*/([a-z0-9_]+)(\\?.*)?$", "$1");
      try (Connection other = DriverManager.getConnection(mariadb.jdbcUrl(database), mariadb.user(),
              mariadb.password());
          PreparedStatement lock = other.prepareStatement("SELECT GET_LOCK(?, 0)")) {
        lock.setString(1, job.mariaDbLockName());
        try (ResultSet rs = lock.executeQuery()) {
          rs.next();
          assertThat(rs.getInt(1)).isEqualTo(1);
        }
        assertThat(job.purgeExpired()).isZero();
        assertThat(recorder.yields).containsExactly(true);
        assertThat(count("consumer_group = 'old'")).isEqualTo(10);
        // released explicitly: the server ends a closed connection's session (and its locks)
        // asynchronously, so closing alone would race the next batch
        try (PreparedStatement release = other.prepareStatement("DO RELEASE_LOCK(?)")) {
          release.setString(1, job.mariaDbLockName());
          release.execute();
        }
      }
      assertThat(job.purgeExpired()).isEqualTo(10);
      // and this job's own lock was released after its batch: taken again at once
      assertThat(job.purgeExpired()).isZero();
      assertThat(recorder.yields).containsExactly(true, false, false);
    }
  }

  @Test
  void expiredAttemptCountsGoToo() throws Exception {
    StoreTests.execute(pool, "INSERT INTO idem_processed_events_attempts"
        + " (consumer_group, idempotency_key, attempts, first_started_at, last_started_at) VALUES"
        + " ('g', 'old', 2, UTC_TIMESTAMP(6) - INTERVAL 9 DAY, UTC_TIMESTAMP(6) - INTERVAL 8 DAY),"
        + " ('g', 'fresh', 2, UTC_TIMESTAMP(6) - INTERVAL 9 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY)");
    try (RetentionJob job = job(new RetentionJobIT.Recorder()).build()) {
      job.purgeExpired();
    }
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_processed_events_attempts"
        + " WHERE idempotency_key = 'old'")).isZero();
    assertThat(StoreTests.count(pool, "SELECT count(*) FROM idem_processed_events_attempts"
        + " WHERE idempotency_key = 'fresh'")).isEqualTo(1);
  }
}
