package io.idem.demo;

import io.idem.testkit.DeadLetteredMessage;
import io.idem.fixtures.ChildJvm;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;

/**
 * A rehearsal of moving a consumer from one broker to another without applying anything twice:
 * one consumer process runs an adapter for each broker, both in the same consumer group on the
 * same processed-events store. The events are published in three phases, each applied before the
 * next starts:
 *
 * <ol>
 *   <li>old only: the first third goes to the old broker;
 *   <li>cutover: the second third goes to BOTH brokers (producers dual-publish), so every event
 *       arrives twice, on two brokers, and the two adapters race for it;
 *   <li>new only: the last third goes to the new broker.
 * </ol>
 *
 * <p>Producer retries (same business id, same payload) are mixed in as in {@link LedgerRun}, and
 * the consumer process is optionally killed (SIGKILL) at random moments and restarted. The ledger
 * then compares the business table with what was published: each order applied exactly once, no
 * dead letters.
 *
 * <p>Not thread-safe; one run at a time per instance.
 */
public final class MigrationRun {
  private static final Duration POLL = Duration.ofMillis(50);

  private final DemoBroker from;
  private final DemoBroker to;
  private final int events;
  private final double duplicateRate;
  private final int crashes;
  private final long seed;
  private final Duration timeout;
  private final boolean keepSchema;
  private final Consumer<String> out;

  private MigrationRun(Builder b) {
    this.from = b.from;
    this.to = b.to;
    this.events = b.events;
    this.duplicateRate = b.duplicateRate;
    this.crashes = b.crashes;
    this.seed = b.seed;
    this.timeout = b.timeout;
    this.keepSchema = b.keepSchema;
    this.out = b.out;
  }

  /** A migration from {@code from} to {@code to}, two different brokers, both started. */
  public static Builder builder(DemoBroker from, DemoBroker to) {
    return new Builder(from, to);
  }

  /**
   * Publishes the three phases, consumes them through the crashes, and returns the ledger.
   *
   * @throws IllegalStateException when a broker or the database fails
   */
  public MigrationLedger run() throws InterruptedException {
    String runId = Long.toString(seed & 0xffffff, 36) + Long.toString(System.nanoTime() & 0xfffff, 36);
    String oldDestination = "idem-migrate-" + from.name() + "-" + runId;
    String newDestination = "idem-migrate-" + to.name() + "-" + runId;
    String group = "idem-migrate-" + runId;
    String tag = "[" + from.name() + "->" + to.name() + "] ";
    Random random = new Random(seed);

    try (DemoDatabase db = DemoDatabase.create("idem_migrate_" + runId)) {
      out.accept(tag + DemoDatabase.describe(db.schema));
      from.createDestination(oldDestination);
      to.createDestination(newDestination);
      OrderEvents stream = OrderEvents.generate(events, duplicateRate, seed, runId);
      db.recordPublished(stream.orderIds());
      List<OrderEvents.Event> all = stream.events();
      int cut1 = all.size() / 3;
      int cut2 = 2 * all.size() / 3;
      List<List<OrderEvents.Event>> phases = List.of(all.subList(0, cut1), all.subList(cut1, cut2),
          all.subList(cut2, all.size()));
      long unique = stream.orderIds().size();
      long[] crashAt = crashPlan(phases, crashes, random);

      Children children = new Children(oldDestination, newDestination, group, db.schema, crashAt, tag);
      long start = System.nanoTime();
      long deadline = start + timeout.toNanos();
      Set<String> publishedOrders = new LinkedHashSet<>();
      boolean inTime = true;
      for (int p = 0; p < 3 && inTime; p++) {
        List<OrderEvents.Event> phase = phases.get(p);
        List<Outbound> messages = phase.stream().map(e -> Outbound.keyed(e.orderId(), e.payload())).toList();
        if (p <= 1) {
          from.publish(oldDestination, messages);
        }
        if (p >= 1) {
          to.publish(newDestination, messages);
        }
        phase.forEach(e -> publishedOrders.add(e.orderId()));
        out.accept(String.format(Locale.ROOT, "%sphase %d (%s): published %,d events to %s", tag, p + 1,
            p == 0 ? "old only" : p == 1 ? "cutover" : "new only", phase.size(),
            p == 0 ? from.name() : p == 1 ? from.name() + " and " + to.name() : to.name()));
        long target = publishedOrders.size();
        inTime = children.await(() -> db.ordersApplied() >= target, db, unique, deadline);
      }
      if (inTime) {
        inTime = children.await(() -> from.pending(oldDestination, group) == 0
            && to.pending(newDestination, group) == 0 && children.crashed >= crashes, db, unique, deadline);
      }
      if (!inTime) {
        out.accept(tag + "timed out after " + DurationArgument.format(timeout) + " with " + children.crashed + "/" + crashes + " crashes");
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      children.current.stop(Duration.ofSeconds(60));
      ConsumerOutput seen = ConsumerOutput.of(children.all);
      List<DeadLetteredMessage> deadLetters = new ArrayList<>(from.readDeadLetters(oldDestination));
      deadLetters.addAll(to.readDeadLetters(newDestination));
      long wrong = DeadLetterCheck.wrong(deadLetters, List.of());
      if (wrong > 0) {
        out.accept(tag + "dead-letter destinations: " + DeadLetterCheck.describe(deadLetters, List.of()));
      }
      long published = phases.get(0).size() + 2L * phases.get(1).size() + phases.get(2).size();
      Ledger ledger = new Ledger(from.name() + "->" + to.name(), published, unique, seen.deliveries(),
          seen.duplicates(), db.effects(), db.markers(group), db.doubled(), db.missing() + db.unexpected(), deadLetters.size(), 0,
          wrong, children.crashed, crashes, null, seconds, children.unexpectedExits, 1);
      if (!inTime) {
        ledger = ledger.withTimedOut(timeout);
      }
      if (!keepSchema && ledger.ok()) {
        db.dropSchema();
        from.deleteDestination(oldDestination);
        to.deleteDestination(newDestination);
      }
      return new MigrationLedger(ledger, from.name(), to.name(), phases.get(0).size(), phases.get(1).size(),
          phases.get(2).size(), seen.deliveries(from.name()), seen.duplicates(from.name()),
          seen.deliveries(to.name()), seen.duplicates(to.name()));
    }
  }

  /**
   * When to kill the consumer, in orders applied: the first crash during the cutover (the phase
   * that matters most), the next ones in the old-only, then the new-only phase, and so on round;
   * each at a random point of its phase. Sorted.
   */
  static long[] crashPlan(List<List<OrderEvents.Event>> phases, int crashes, Random random) {
    long[] ordersBefore = new long[phases.size() + 1];
    Set<String> seen = new LinkedHashSet<>();
    for (int p = 0; p < phases.size(); p++) {
      phases.get(p).forEach(e -> seen.add(e.orderId()));
      ordersBefore[p + 1] = seen.size();
    }
    int[] order = {1, 0, 2};
    long[] crashAt = new long[crashes];
    for (int i = 0; i < crashes; i++) {
      int phase = order[i % order.length];
      long from = ordersBefore[phase];
      long span = ordersBefore[phase + 1] - from;
      crashAt[i] = from + (long) (span * (0.1 + 0.8 * random.nextDouble()));
    }
    Arrays.sort(crashAt);
    return crashAt;
  }

  /** The consumer processes of one run: the current one, and the SIGKILLs and restarts. */
  private final class Children {
    final List<ChildJvm> all = new ArrayList<>();
    final String oldDestination;
    final String newDestination;
    final String group;
    final String schema;
    final long[] crashAt;
    final String tag;
    final long startedAt = System.nanoTime();
    ChildJvm current;
    int crashed;
    int unexpectedExits;

    Children(String oldDestination, String newDestination, String group, String schema, long[] crashAt, String tag) {
      this.oldDestination = oldDestination;
      this.newDestination = newDestination;
      this.group = group;
      this.schema = schema;
      this.crashAt = crashAt;
      this.tag = tag;
      restart();
    }

    private void restart() {
      current = ConsumerProcess.start("consumer-" + (all.size() + 1), List.of(from, to),
          List.of(oldDestination, newDestination), group, schema, List.of(), out);
      all.add(current);
    }

    /** Polls until {@code done}, killing and restarting the consumer on the way; false on timeout. */
    boolean await(Condition done, DemoDatabase db, long unique, long deadline) throws InterruptedException {
      long lastReport = System.nanoTime();
      while (true) {
        Thread.sleep(POLL.toMillis());
        long applied = db.ordersApplied();
        if (crashed < crashAt.length && applied >= crashAt[crashed] && current.printed("READY")) {
          current.kill();
          crashed++;
          out.accept(String.format(Locale.ROOT,
              "%scrash %d/%d: consumer killed (SIGKILL) at %,d/%,d orders applied; restarting",
              tag, crashed, crashAt.length, applied, unique));
          restart();
          continue;
        }
        if (!current.isAlive()) {
          unexpectedExits++; // an unplanned death fails the run: never restarted away
          List<String> lines = current.lines();
          out.accept(tag + "consumer died unplanned (status " + current.waitFor(Duration.ofSeconds(5))
              + "): the run FAILS; last output: "
              + String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size())));
          return false;
        }
        if (done.holds()) {
          return true;
        }
        if (crashed < crashAt.length && applied >= unique) {
          crashAt[crashed] = applied; // every order applied before the planned point: crash it while it idles
        }
        long now = System.nanoTime();
        if (now - lastReport > 2_000_000_000L) {
          lastReport = now;
          out.accept(String.format(Locale.ROOT, "%s%,d/%,d orders applied (%d%%), %d/%d crashes, %.1f s",
              tag, applied, unique, applied * 100 / Math.max(1, unique), crashed, crashAt.length,
              (now - startedAt) / 1e9));
        }
        if (now > deadline) {
          return false;
        }
      }
    }
  }

  @FunctionalInterface
  private interface Condition {
    boolean holds();
  }

  /** Builder of a {@link MigrationRun}; {@link #build()} validates. Not thread-safe. */
  public static final class Builder {
    private final DemoBroker from;
    private final DemoBroker to;
    private int events = 10_000;
    private double duplicateRate = 0.2;
    private int crashes;
    private long seed = System.nanoTime();
    private Duration timeout = Duration.ofMinutes(10);
    private boolean keepSchema;
    private Consumer<String> out = System.out::println;

    private Builder(DemoBroker from, DemoBroker to) {
      this.from = Objects.requireNonNull(from, "from");
      this.to = Objects.requireNonNull(to, "to");
    }

    /** Business events to publish over the three phases, producer retries included; default 10,000. */
    public Builder events(int value) {
      this.events = value;
      return this;
    }

    /** Share of events that are producer retries; default 0.2. */
    public Builder duplicateRate(double value) {
      this.duplicateRate = value;
      return this;
    }

    /**
     * How many times the consumer process is killed (SIGKILL) at a random moment; default 0. The
     * first crash falls in the cutover, the next in the old-only phase, then the new-only one.
     */
    public Builder crashes(int value) {
      this.crashes = value;
      return this;
    }

    public Builder seed(long value) {
      this.seed = value;
      return this;
    }

    /** Give up after this long; default 10 minutes. */
    public Builder timeout(Duration value) {
      this.timeout = Objects.requireNonNull(value, "timeout");
      return this;
    }

    /** Keep the PostgreSQL schema and the destinations after a successful run; default false. */
    public Builder keepSchema(boolean value) {
      this.keepSchema = value;
      return this;
    }

    /** Where progress lines go; default standard output. */
    public Builder output(Consumer<String> value) {
      this.out = Objects.requireNonNull(value, "output");
      return this;
    }

    /** @throws IllegalArgumentException when a setting is out of range or both brokers are the same */
    public MigrationRun build() {
      if (from.name().equals(to.name())) {
        throw new IllegalArgumentException("--migrate-from and --migrate-to must differ, but both were '"
            + from.name() + "'");
      }
      if (events < 3) {
        throw new IllegalArgumentException("events must be >= 3 (one per phase), but was " + events);
      }
      if (!(duplicateRate >= 0 && duplicateRate < 1)) {
        throw new IllegalArgumentException("duplicateRate must be in [0, 1), but was " + duplicateRate);
      }
      if (crashes < 0) {
        throw new IllegalArgumentException("crashes must be >= 0, but was " + crashes);
      }
      return new MigrationRun(this);
    }
  }
}
