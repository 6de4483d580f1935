package io.idem.demo;

import io.idem.fixtures.ChildJvm;
import io.idem.fixtures.PostgresFixture;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

/**
 * One ledger check on one broker: publish the events, consume them in a child process that is
 * killed with SIGKILL at random moments and restarted, then compare the business table with what
 * was published.
 */
final class LedgerRun {
  private static final Duration POLL = Duration.ofMillis(50);

  private final DemoBroker broker;
  private final int events;
  private final double duplicateRate;
  private final int crashes;
  private final long seed;
  private final Duration timeout;
  private final boolean keepSchema;
  private final Consumer<String> out;

  LedgerRun(DemoBroker broker, int events, double duplicateRate, int crashes, long seed,
      Duration timeout, boolean keepSchema, Consumer<String> out) {
    this.broker = broker;
    this.events = events;
    this.duplicateRate = duplicateRate;
    this.crashes = crashes;
    this.seed = seed;
    this.timeout = timeout;
    this.keepSchema = keepSchema;
    this.out = out;
  }

  Ledger run() throws InterruptedException {
    String runId = Long.toString(seed & 0xffffff, 36) + Long.toString(System.nanoTime() & 0xfffff, 36);
    String destination = "idem-demo-" + broker.name() + "-" + runId;
    String group = "idem-demo-" + runId;
    String tag = "[" + broker.name() + "] ";
    Random random = new Random(seed);

    try (DemoDatabase db = DemoDatabase.create("idem_demo_" + runId)) {
      out.accept(tag + "PostgreSQL schema " + db.schema + " on " + PostgresFixture.shared().origin());
      broker.createDestination(destination);
      OrderEvents stream = OrderEvents.generate(events, duplicateRate, seed, runId);
      db.recordPublished(stream.orderIds());
      long publishStart = System.nanoTime();
      publish(destination, stream, tag);
      out.accept(String.format(Locale.ROOT, "%spublished %d events (%d orders + %d producer retries) to %s in %.1f s",
          tag, stream.events().size(), stream.orderIds().size(), stream.retries(), destination,
          (System.nanoTime() - publishStart) / 1e9));

      long unique = stream.orderIds().size();
      long[] crashAt = new long[crashes];
      for (int i = 0; i < crashes; i++) {
        crashAt[i] = (long) (unique * (0.05 + 0.8 * random.nextDouble()));
      }
      Arrays.sort(crashAt);

      List<ChildJvm> children = new ArrayList<>();
      long start = System.nanoTime();
      long deadline = start + timeout.toNanos();
      int crashed = 0;
      ChildJvm child = startConsumer(destination, group, db.schema, children.size() + 1);
      children.add(child);
      long lastReport = 0;
      while (true) {
        Thread.sleep(POLL.toMillis());
        long applied = db.ordersApplied();
        long now = System.nanoTime();
        if (crashed < crashes && applied >= crashAt[crashed] && child.printed("READY")) {
          child.kill();
          crashed++;
          out.accept(String.format(Locale.ROOT, "%scrash %d/%d: consumer killed (SIGKILL) at %d/%d orders applied; restarting",
              tag, crashed, crashes, applied, unique));
          child = startConsumer(destination, group, db.schema, children.size() + 1);
          children.add(child);
          continue;
        }
        if (!child.isAlive()) {
          out.accept(tag + "consumer exited unexpectedly (status " + child.waitFor(Duration.ofSeconds(1))
              + "); last output: " + tail(child));
          child = startConsumer(destination, group, db.schema, children.size() + 1);
          children.add(child);
          continue;
        }
        if (now - lastReport > 2_000_000_000L) {
          lastReport = now;
          out.accept(String.format(Locale.ROOT, "%s%,d/%,d orders applied (%d%%), %d/%d crashes, %.1f s",
              tag, applied, unique, applied * 100 / Math.max(1, unique), crashed, crashes, (now - start) / 1e9));
        }
        boolean allApplied = applied + broker.deadLettered(destination) >= unique;
        if (allApplied && crashed == crashes && broker.pending(destination, group) == 0) {
          break;
        }
        if (allApplied && crashed < crashes) {
          // finished faster than the planned crash points: crash now, while it idles on the queue
          crashAt[crashed] = applied;
        }
        if (now > deadline) {
          out.accept(tag + "timed out after " + timeout + "; stopping the consumer");
          break;
        }
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      child.stop(Duration.ofSeconds(60));
      long deliveries = 0;
      long duplicates = 0;
      for (ChildJvm c : children) {
        for (String line : c.lines()) {
          if (line.startsWith("OUTCOME ")) {
            deliveries++;
            duplicates += line.equals("OUTCOME DUPLICATE") ? 1 : 0;
          }
        }
      }
      Ledger ledger = new Ledger(broker.name(), stream.events().size(), unique, deliveries, duplicates,
          db.effects(), db.doubled(), db.missing() + db.unexpected(), broker.deadLettered(destination),
          crashed, seconds);
      if (!keepSchema && ledger.ok()) {
        db.dropSchema();
        broker.deleteDestination(destination);
      }
      return ledger;
    }
  }

  private void publish(String destination, OrderEvents stream, String tag) {
    List<Map.Entry<String, byte[]>> batch = new ArrayList<>();
    int sent = 0;
    for (OrderEvents.Event e : stream.events()) {
      batch.add(new AbstractMap.SimpleImmutableEntry<>(e.orderId(), e.payload()));
      if (batch.size() == 1000) {
        broker.publish(destination, batch);
        sent += batch.size();
        batch.clear();
        if (sent % 5000 == 0) {
          out.accept(String.format(Locale.ROOT, "%spublished %,d/%,d", tag, sent, stream.events().size()));
        }
      }
    }
    if (!batch.isEmpty()) {
      broker.publish(destination, batch);
    }
  }

  private ChildJvm startConsumer(String destination, String group, String schema, int generation) {
    List<String> args = new ArrayList<>(List.of(
        "--broker=" + broker.name(), "--destination=" + destination, "--group=" + group, "--schema=" + schema));
    args.addAll(broker.connectionArgs());
    PostgresFixture pg = PostgresFixture.shared();
    return ChildJvm.start("consumer-" + generation, ConsumerProcess.class,
        List.of("-Xmx256m", "-Didem.testcontainers=false"),
        args,
        Map.of("IDEM_POSTGRES_URL", pg.jdbcUrl(), "IDEM_POSTGRES_USER", pg.user(),
            "IDEM_POSTGRES_PASSWORD", pg.password()),
        line -> {
          if (!line.contains("OUTCOME ")) {
            out.accept("  " + line);
          }
        });
  }

  private static String tail(ChildJvm child) {
    List<String> lines = child.lines();
    return String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
  }
}
