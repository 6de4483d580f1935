package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.BrokerConsumer;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotentConsumer;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.demo.Outbound;
import io.idem.testkit.OutcomeRecorder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 6, item 4, the same for every broker: PostgreSQL is taken away from a running consumer
 * mid-stream (its pool goes through a {@link io.idem.fixtures.TcpProxy} that drops every
 * connection and refuses new ones) for {@link #CUT}, then given back. Proves:
 *
 * <ul>
 *   <li>nothing is acknowledged while the store is unreachable: once in-flight work settled, the
 *       broker's count of unacknowledged messages does not drop, no effect appears, nothing is
 *       dead-lettered — although more events arrive during the cut;
 *   <li>the consumer keeps its broker session ({@link #brokerSession()} unchanged) and keeps
 *       retrying;
 *   <li>after the restore every event is applied exactly once, none wrongly skipped as a
 *       duplicate (effects = published unique keys, none doubled), each on its first delivery
 *       attempt (no message went back to the broker), and nothing is dead-lettered.
 * </ul>
 *
 * Subclasses name the broker and say how its session is identified.
 */
abstract class DatabaseOutageTestBase {
  /** Longer than the brokers' liveness limits the tests run with (Kafka max.poll.interval 3 s, SQS visibility 5 s). */
  static final Duration CUT = Duration.ofSeconds(8);
  static final Duration TIMEOUT = Duration.ofSeconds(120);
  /** Least time the settled state is watched while the database is still cut. */
  static final Duration MIN_HOLD = Duration.ofSeconds(3);
  /** The stream is published in this many chunks, {@link #PACE} apart (about 2.5 s in all); the second half waits for the cut. */
  private static final int CHUNKS = 24;
  private static final Duration PACE = Duration.ofMillis(100);

  protected DemoBroker broker;
  protected ItDatabase db;
  protected String destination;
  protected String group;
  protected final OutcomeRecorder outcomes = new OutcomeRecorder();
  private BrokerConsumer consumer;

  /** {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}. */
  protected abstract String brokerName();

  /**
   * Identifies the consumer's broker session(s) (member ids, connections, consumers): equal
   * before the cut and after the restore when the session was kept.
   */
  protected abstract Object brokerSession();

  /** The consumer under test: by default the demo's adapter consumer. */
  protected BrokerConsumer consumer(IdempotentConsumer<?> pipeline) {
    return broker.consumer(destination, pipeline);
  }

  /** Messages of the destination not yet acknowledged (ready plus held by the consumer). */
  protected long unacknowledged() {
    return broker.pending(destination, group);
  }

  /**
   * The least {@link #unacknowledged()} may read once the cut settled, given how many messages
   * were published during the cut; by default all of those.
   */
  protected long minimumUnacknowledgedDuringCut(int publishedDuringCut) {
    return publishedDuringCut;
  }

  /** Further broker facts that must not change while the database is cut; by default none. */
  protected Object heldWhileCut() {
    return "";
  }

  @BeforeEach
  void setUp() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    broker = DemoBrokers.create(brokerName());
    System.out.println("[it] " + broker.start());
    destination = "idem-it-outage-" + brokerName() + "-" + run;
    group = "idem-it-outage-" + run;
    broker.createDestination(destination);
    db = ItDatabase.throughProxy("it_outage_" + brokerName());
  }

  @AfterEach
  void tearDown() {
    if (consumer != null) {
      consumer.close();
    }
    if (db != null) {
      db.close();
    }
    if (broker != null) {
      broker.deleteDestination(destination);
      broker.close();
    }
  }

  @Test
  void databaseCutMidStreamAcknowledgesNothingKeepsTheSessionAndAppliesEveryEventOnceAfterRestore() {
    int unique = Scale.events(200, 2000);
    List<Outbound> stream = events(unique);

    IdempotencyKeyExtractor keys = IdempotencyKeyExtractor.defaults();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(db.store)
        .consumerGroup(group)
        .keyExtractor(keys)
        .handler(ItDatabase.recording(keys))
        .retryPolicy(RetryPolicy.builder().maxAttempts(3).initialBackoff(Duration.ofMillis(200))
            .maxBackoff(Duration.ofSeconds(1)).jitter(0.2).build())
        .listener(outcomes)
        .build();
    consumer = consumer(pipeline);
    consumer.start();

    // The stream is published in small chunks while the consumer works. The first half goes out
    // before the cut, the second half only after it: so however fast or slow this machine is,
    // half the stream (more than any consumer's prefetch) is published while the database is away,
    // and the precondition "work is waiting during the cut" is made, not hoped for.
    CountDownLatch cutDone = new CountDownLatch(1);
    int chunkSize = Math.max(1, stream.size() / CHUNKS);
    int half = stream.size() / 2;
    CompletableFuture<Void> publishing = CompletableFuture.runAsync(() -> {
      try {
        for (int i = 0; i < stream.size(); i += chunkSize) {
          if (i >= half) {
            cutDone.await();
          }
          broker.publish(destination, stream.subList(i, Math.min(stream.size(), i + chunkSize)));
          TimeUnit.MILLISECONDS.sleep(PACE.toMillis()); // producer pacing: a stream, not one burst
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    await("mid-stream: a quarter applied").atMost(TIMEOUT).pollInterval(Duration.ofMillis(10))
        .until(() -> db.distinctKeys() >= unique / 4); // the first half holds about unique / 2
    Object session = brokerSession();
    Objects.requireNonNull(db.proxy).cut();
    cutDone.countDown();
    long cutAt = System.nanoTime();
    publishing.join(); // the second half of the stream goes out while the database is away
    int publishedAfterCut = stream.size() - Math.min(stream.size(), roundUp(half, chunkSize));

    Supplier<List<Object>> state = () -> List.of(unacknowledged(), db.totalEffects(), heldWhileCut());
    List<Object> settled = awaitStable("in-flight work settled after the cut", state);
    long held = (Long) settled.get(0);
    int appliedBeforeCut = (Integer) settled.get(1);
    assertThat(held).as("unacknowledged during the cut")
        .isPositive().isGreaterThanOrEqualTo(minimumUnacknowledgedDuringCut(publishedAfterCut));
    assertThat(appliedBeforeCut).isLessThan(unique);
    long retriesAtSettle = outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
    // hold the cut for the rest of CUT, and for at least MIN_HOLD after the work settled
    Duration left = CUT.minusNanos(System.nanoTime() - cutAt);
    Duration hold = left.compareTo(MIN_HOLD) < 0 ? MIN_HOLD : left;
    await("nothing acknowledged while the database is cut").during(hold)
        .atMost(hold.plusSeconds(20)).pollInterval(Duration.ofMillis(500))
        .untilAsserted(() -> {
          assertThat(state.get()).as("unacknowledged, effects, held").isEqualTo(settled);
          assertThat(broker.deadLettered(destination)).isZero();
          assertThat(consumer.isRunning()).isTrue();
        });
    assertThat(outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE)).as("kept retrying").isGreaterThan(retriesAtSettle);
    assertThat(outcomes.count(ProcessingOutcome.DEAD_LETTERED)).isZero();

    db.proxy.restore();
    await("every event applied after the restore").atMost(TIMEOUT)
        .until(() -> db.distinctKeys() == unique && unacknowledged() == 0);

    assertThat(db.totalEffects()).as("effects").isEqualTo(unique);
    assertThat(db.doubled()).as("doubled").isZero();
    assertThat(new HashSet<>(db.processedKeys(group))).isEqualTo(new HashSet<>(db.effectKeys()));
    assertThat(db.appliedOnALaterAttempt()).as("effects applied after a redelivery").isZero();
    assertThat(broker.deadLettered(destination)).isZero();
    assertThat(broker.readDeadLetters(destination)).isEmpty();
    assertThat(brokerSession()).as("broker session after the outage").isEqualTo(session);
    assertThat(consumer.isRunning()).isTrue();
    System.out.printf("[it] %s database outage: %d events (%d unique), %d applied before the cut,"
            + " %d unacknowledged during it, %d store retries, %d duplicates skipped%n",
        brokerName(), stream.size(), unique, appliedBeforeCut, held,
        outcomes.count(ProcessingOutcome.RETRY_STORE_UNAVAILABLE), outcomes.count(ProcessingOutcome.DUPLICATE));
  }

  /** {@code unique} orders, every fifth one published twice (a producer retry). */
  private List<Outbound> events(int unique) {
    List<Outbound> out = new ArrayList<>();
    for (int i = 0; i < unique; i++) {
      String key = group + "-order-" + i;
      Outbound event = Outbound.keyed(key,
          ("{\"orderId\":\"" + key + "\",\"amountCents\":" + (100 + i) + "}").getBytes(StandardCharsets.UTF_8));
      out.add(event);
      if (i % 5 == 0) {
        out.add(event);
      }
    }
    return out;
  }

  /** The first multiple of {@code step} at or above {@code n}: where the chunked publisher crosses {@code n}. */
  private static int roundUp(int n, int step) {
    return (n + step - 1) / step * step;
  }

  /** Waits until {@code state} reads the same for 1.5 s in a row; returns it. */
  private static <T> T awaitStable(String what, Supplier<T> state) {
    Object[] last = {null};
    long[] since = {System.nanoTime()};
    await(what).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() -> {
      T now = state.get();
      if (!now.equals(last[0])) {
        last[0] = now;
        since[0] = System.nanoTime();
        return false;
      }
      return System.nanoTime() - since[0] >= Duration.ofMillis(1500).toNanos();
    });
    @SuppressWarnings("unchecked")
    T stable = (T) last[0];
    return stable;
  }
}
