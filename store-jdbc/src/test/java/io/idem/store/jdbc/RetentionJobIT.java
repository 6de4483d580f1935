package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.spi.RedeliveryHorizon;
import io.idem.spi.RedeliveryHorizon.Horizon;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link RetentionJob} on the real PostgreSQL: what it deletes, in what batches, next to another job. */
class RetentionJobIT {
  private HikariDataSource pool;
  private MyBatisProcessedEventStore store;

  @BeforeEach
  void setUp() {
    String schema = StoreTests.newSchema("retention");
    pool = StoreTests.pool(schema, "idem-retention-" + UUID.randomUUID().toString().substring(0, 8), null,
        c -> c.setMaximumPoolSize(6));
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(pool))
        .createTableIfMissing(true).build();
  }

  @AfterEach
  void tearDown() {
    pool.close();
  }

  /** {@code rows} markers of group {@code group}, processed {@code daysAgo} days ago. */
  private void markers(String group, int rows, int daysAgo) throws Exception {
    StoreTests.execute(pool, "INSERT INTO idem_processed_events"
        + " (consumer_group, idempotency_key, key_source, payload_sha256, processed_at)"
        + " SELECT '" + group + "', 'k-' || i, 'HEADER', decode(repeat('00', 32), 'hex'),"
        + " now() - interval '" + daysAgo + " days' - i * interval '1 millisecond'"
        + " FROM generate_series(1, " + rows + ") AS i");
  }

  private long count(String where) throws Exception {
    return StoreTests.count(pool, "SELECT count(*) FROM idem_processed_events WHERE " + where);
  }

  /** Records every batch and pass. */
  static final class Recorder implements RetentionListener {
    final List<Integer> batches = Collections.synchronizedList(new ArrayList<>());
    final List<Boolean> yields = Collections.synchronizedList(new ArrayList<>());
    volatile @Nullable Duration oldest;

    @Override
    public void onBatch(int deleted, Duration took) {
      batches.add(deleted);
    }

    @Override
    public void onPass(long deleted, Duration took, boolean yielded) {
      yields.add(yielded);
    }

    @Override
    public void onOldestMarker(@Nullable Duration age) {
      oldest = age;
    }
  }

  private RetentionJob.Builder job(RetentionListener listener) {
    // a 7-day window, not the default, for the tests' 8-day-old (expired) and 6-day-old markers
    return RetentionJob.builder(store).retention(Duration.ofDays(7)).batchSize(1000).minPause(Duration.ZERO)
        .pauseRatio(0).listener(listener);
  }

  @Test
  void purgesOnlyExpiredMarkersInBoundedBatches() throws Exception {
    markers("old", 2500, 8);
    markers("fresh", 300, 6);
    Recorder recorder = new Recorder();
    try (RetentionJob job = job(recorder).build()) {
      assertThat(job.purgeExpired()).isEqualTo(2500);
    }

    assertThat(recorder.batches).containsExactly(1000, 1000, 500);
    assertThat(count("consumer_group = 'old'")).isZero();
    assertThat(count("consumer_group = 'fresh'")).isEqualTo(300);
    assertThat(recorder.oldest).isBetween(Duration.ofDays(6), Duration.ofDays(6).plusHours(1));
  }

  @Test
  void twoJobsAtOnceShareTheWorkWithoutDeadlockOrDoubleWork() throws Exception {
    markers("old", 20_000, 8);
    markers("fresh", 100, 1);
    Recorder first = new Recorder();
    Recorder second = new Recorder();
    ExecutorService threads = Executors.newFixedThreadPool(2);
    try (RetentionJob a = job(first).batchSize(500).build();
        RetentionJob b = job(second).batchSize(500).build()) {
      CountDownLatch go = new CountDownLatch(1);
      Future<Long> byA = threads.submit(() -> {
        go.await();
        return a.purgeExpired();
      });
      Future<Long> byB = threads.submit(() -> {
        go.await();
        return b.purgeExpired();
      });
      go.countDown();
      long deleted = byA.get(60, TimeUnit.SECONDS) + byB.get(60, TimeUnit.SECONDS);
      // a pass that yielded left the rest to the other: together they deleted each row once
      assertThat(deleted).isEqualTo(20_000);
    } finally {
      threads.shutdownNow();
    }
    assertThat(count("true")).isEqualTo(100);
    List<Integer> all = new ArrayList<>(first.batches);
    all.addAll(second.batches);
    assertThat(all).allMatch(n -> n <= 500);
    assertThat(all.stream().mapToInt(Integer::intValue).sum()).isEqualTo(20_000);
    // at most one of the two passes ran to the end; the other yielded when it met the lock
    assertThat(first.yields.get(0) && second.yields.get(0)).isFalse();
  }

  @Test
  void aPassYieldsWhileAnotherInstanceHoldsThePurgeLock() throws Exception {
    markers("old", 10, 8);
    Recorder recorder = new Recorder();
    try (RetentionJob job = job(recorder).build();
        var other = pool.getConnection();
        var s = other.createStatement()) {
      other.setAutoCommit(false);
      s.execute("SELECT pg_advisory_xact_lock(" + RetentionJob.LOCK_SPACE
          + ", hashtext('" + store.tableName() + "'))");
      assertThat(job.purgeExpired()).isZero();
      other.rollback();
      assertThat(recorder.yields).containsExactly(true);
      assertThat(job.purgeExpired()).isEqualTo(10);
    }
  }

  @Test
  void theScheduleRunsPassesUntilClosedAndCountsInMicrometer() throws Exception {
    markers("old", 1500, 8);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    RetentionJob job = RetentionJob.builder(store).retention(Duration.ofDays(7)).initialDelay(Duration.ZERO)
        .interval(Duration.ofMillis(200)).listener(new MicrometerRetentionListener(registry, store.tableName()))
        .build();
    job.start();
    try {
      await().atMost(Duration.ofSeconds(30))
          .until(() -> registry.counter("idem.retention.purged", "table", store.tableName()).count() == 1500);
      await().atMost(Duration.ofSeconds(30)).until(() -> registry.get("idem.retention.oldest.marker.age")
          .gauge().value() == 0.0); // the table is empty
    } finally {
      job.close();
    }
    assertThat(count("true")).isZero();
    assertThat(registry.get("idem.retention.batches").timer().count()).isGreaterThanOrEqualTo(2);
    assertThatThrownBy(job::start).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
  }

  @Test
  void aWindowNotLongerThanAKnownHorizonIsRefused() {
    RedeliveryHorizon rabbit = RedeliveryHorizon.declared("rabbitmq queue orders", Duration.ofDays(20),
        "x-message-ttl 19 days + 1 day of retries");
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(rabbit).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT360H is not longer than the redelivery horizon PT480H"
            + " of rabbitmq queue orders")
        .hasMessageContaining("x-message-ttl 19 days")
        .hasMessageContaining("retention(PT504H)");
    // equal is refused too: the purge's cutoff would race the source's last redelivery
    assertThatThrownBy(() -> RetentionJob.builder(store).retention(Duration.ofDays(20)).redeliveryHorizon(rabbit)
            .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT480H is not longer than the redelivery horizon PT480H");
    assertThat(RetentionJob.builder(store).retention(Duration.ofDays(20).plusSeconds(1)).redeliveryHorizon(rabbit)
        .build().horizons()).extracting(Horizon::bound).containsExactly(Duration.ofDays(20));
  }

  @Test
  void anUnboundedHorizonNeedsTheExplicitOption() {
    RedeliveryHorizon forever = () -> Horizon.unbounded("kafka topic orders", "retention.ms=-1");
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(forever).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("kafka topic orders is unbounded (retention.ms=-1)")
        .hasMessageContaining("acceptReplaysBeyondWindow(true)");
    assertThat(RetentionJob.builder(store).redeliveryHorizon(forever).acceptReplaysBeyondWindow(true).build()
        .horizons()).hasSize(1);
  }

  @Test
  void aHorizonThatCannotBeReadRefusesTheJob() {
    RedeliveryHorizon broken = () -> {
      throw new IllegalStateException("broker down");
    };
    assertThatThrownBy(() -> RetentionJob.builder(store).redeliveryHorizon(broken).build())
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("could not be read")
        .hasMessageContaining("broker down");
  }

  @Test
  void settingsOutOfRangeAreRefusedNamingTheSetting() {
    assertThatThrownBy(() -> RetentionJob.builder(store).batchSize(0).build())
        .hasMessage("batchSize must be in [1, 100000], but was 0");
    assertThatThrownBy(() -> RetentionJob.builder(store).retention(Duration.ZERO).build())
        .hasMessage("retention must be positive, but was PT0S");
    assertThatThrownBy(() -> RetentionJob.builder(store).pauseRatio(-1).build())
        .hasMessage("pauseRatio must be in [0, 100], but was -1.0");
  }
}
