package io.idem.demo;

import io.idem.fixtures.ChildJvm;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import io.idem.testkit.DeadLetteredMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Random;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One ledger check on one broker: publish the events, consume them in a child process that
 * crashes and is restarted, then compare the business table with what was published.
 *
 * <p>Crashes are either SIGKILLs from this process at random moments ({@code crashPoint} null,
 * the demo's default) or halts the child injects itself at a {@link CrashPoint}
 * ({@link CrashInjector}) after a random number of messages. Optional poison messages (no key)
 * must all end up dead-lettered, and nothing else: the dead-letter destination is read back
 * ({@link DemoBroker#readDeadLetters}) and compared message by message.
 *
 * <p>With {@link Builder#receipts(boolean) receipts}, each OrderPaid handler also enqueues a
 * receipt in the outbox, a relay in a child process of its own ({@link RelayProcess}) publishes
 * them to a second destination on the same broker with that adapter's outbox publisher, and a
 * downstream Idem consumer in the consumer process applies them to the receipts table. The relay is
 * killed as often as the consumer: it pauses right after the broker confirmed a receipt, before
 * marking it sent, and this process SIGKILLs it there; the run checks in the outbox table that the
 * row was left unsent (so it is published twice) and that every order still has exactly one
 * receipt.
 *
 * <p>Not thread-safe; one run at a time per instance. Runs on different brokers or with different
 * seeds use their own schema, destination and consumer group, so they may run side by side.
 */
public final class LedgerRun {
  private static final Duration POLL = Duration.ofMillis(50);
  private static final Duration IDLE_BEFORE_GIVING_UP = Duration.ofSeconds(3);

  private final DemoBroker broker;
  private final int events;
  private final double duplicateRate;
  private final int crashes;
  private final @Nullable CrashPoint crashPoint;
  private final int poisonMessages;
  private final long seed;
  private final Duration timeout;
  private final boolean keepSchema;
  private final int maxBatchSize;
  private final boolean receipts;
  private final @Nullable String database;
  private final int replayDeadLetters;
  private final Consumer<String> out;
  /** With {@link Builder#replayDeadLetters(int)}: the orders failing while this file exists. */
  private java.nio.file.@Nullable Path failSwitch;

  private LedgerRun(Builder b) {
    this.broker = b.broker;
    this.events = b.events;
    this.duplicateRate = b.duplicateRate;
    this.crashes = b.crashes;
    this.crashPoint = b.crashPoint;
    this.poisonMessages = b.poisonMessages;
    this.seed = b.seed;
    this.timeout = b.timeout;
    this.keepSchema = b.keepSchema;
    this.maxBatchSize = b.maxBatchSize;
    this.receipts = b.receipts;
    this.database = b.database;
    this.replayDeadLetters = b.replayDeadLetters;
    this.out = b.out;
  }

  /** A run on {@code broker}, which must be started. */
  public static Builder builder(DemoBroker broker) {
    return new Builder(broker);
  }

  /** Publishes, consumes through the crashes, and returns the ledger. */
  public Ledger run() throws InterruptedException {
    return DemoDatabase.on(database, this::runOnDatabase);
  }

  private Ledger runOnDatabase() throws InterruptedException {
    String runId = Long.toString(seed & 0xffffff, 36) + Long.toString(System.nanoTime() & 0xfffff, 36);
    String destination = "idem-demo-" + broker.name() + "-" + runId;
    String group = "idem-demo-" + runId;
    String tag = "[" + broker.name() + "] ";
    Random random = new Random(seed);

    try (DemoDatabase db = DemoDatabase.create("idem_demo_" + runId)) {
      out.accept(tag + DemoDatabase.describe(db.schema));
      broker.createDestination(destination);
      String receiptsQueue = destination + "-receipts";
      String receiptsGroup = group + ConsumerProcess.RECEIPTS_GROUP_SUFFIX;
      if (receipts) {
        broker.createDestination(receiptsQueue);
      }
      String receiptsDestination = receipts ? broker.outboxDestination(receiptsQueue) : ""; // "": no receipts
      OrderEvents stream = OrderEvents.generate(events, duplicateRate, seed, runId);
      db.recordPublished(stream.orderIds());
      List<String> poisonIds = new ArrayList<>();
      for (int i = 0; i < poisonMessages; i++) {
        poisonIds.add(runId + "-keyless-" + i);
      }
      long publishStart = System.nanoTime();
      publish(destination, stream, poisonIds, random, tag);
      out.accept(String.format(Locale.ROOT,
          "%spublished %,d events (%,d orders + %,d producer retries%s) to %s in %.1f s",
          tag, stream.events().size(), stream.orderIds().size(), stream.retries(),
          poisonMessages > 0 ? " + " + poisonMessages + " without a key" : "", destination,
          (System.nanoTime() - publishStart) / 1e9));

      long unique = stream.orderIds().size();
      List<String> failing = failingOrders(stream, random);
      boolean replayPending = !failing.isEmpty();
      if (replayPending) {
        failSwitch = FailingOrders.writeSwitch(failing);
        out.accept(tag + failing.size() + " orders fail non-retryably until the dead-letter replay: " + failing);
      }
      long[] crashAt = new long[crashes];
      for (int i = 0; i < crashes; i++) {
        crashAt[i] = (long) (unique * (0.05 + 0.8 * random.nextDouble()));
      }
      Arrays.sort(crashAt);

      List<ChildJvm> children = new ArrayList<>();
      long start = System.nanoTime();
      long deadline = start + timeout.toNanos();
      int crashed = 0;
      int unexpectedExits = 0;
      int relayCrashes = receipts ? crashes : 0;
      int relayCrashed = 0;
      int relayDeaths = 0;
      long republished = 0;
      int relays = 0;
      ChildJvm relay = null;
      if (receipts) {
        relay = startRelay(db, receiptsDestination, unique, ++relays, relayCrashes, relayCrashed, random);
      }
      ChildJvm child = startConsumer(destination, receiptsQueue, group, db, unique, children.size() + 1, crashed,
          random);
      children.add(child);
      long lastReport = 0;
      long idleSince = 0;
      boolean replayed = failing.isEmpty();
      boolean timedOut = false;
      while (true) {
        Thread.sleep(POLL.toMillis());
        long applied = db.ordersApplied();
        long now = System.nanoTime();
        if (relay != null && relayCrashed < relayCrashes && relay.printed(RelayProcess.PAUSED_PREFIX)) {
          relay.kill();
          relayCrashed++;
          long row = pausedRow(relay);
          List<Long> confirmed = confirmedRows(relay);
          long unsent = db.unsent(confirmed);
          republished += unsent;
          out.accept(String.format(Locale.ROOT,
              "%srelay crash %d/%d: relay killed (SIGKILL) after the broker confirmed receipt row %d, before the"
                  + " mark; %d of the %d rows it had published are unsent, to be published again; restarting",
              tag, relayCrashed, relayCrashes, row, unsent, confirmed.size()));
          relay = startRelay(db, receiptsDestination, unique, ++relays, relayCrashes, relayCrashed, random);
          continue;
        }
        if (relay != null && !relay.isAlive()) {
          relayDeaths++;
          out.accept(tag + "relay died unplanned (status " + relay.waitFor(Duration.ofSeconds(5))
              + "): the run FAILS; last output: " + tail(relay));
          break;
        }
        if (crashPoint == null && crashed < crashes && applied >= crashAt[crashed] && child.printed("READY")) {
          child.kill();
          crashed++;
          out.accept(String.format(Locale.ROOT,
              "%scrash %d/%d: consumer killed (SIGKILL) at %,d/%,d orders applied; restarting",
              tag, crashed, crashes, applied, unique));
          child = startConsumer(destination, receiptsQueue, group, db, unique, children.size() + 1, crashed, random);
          children.add(child);
          continue;
        }
        if (!child.isAlive()) {
          int status = child.waitFor(Duration.ofSeconds(5));
          String landed = status == CrashInjector.EXIT_STATUS ? landedAt(child.lines(), crashPoint) : null;
          if (landed != null) {
            crashed++;
            out.accept(String.format(Locale.ROOT, "%scrash %d/%d: consumer halted itself at %s at %,d/%,d orders applied; restarting",
                tag, crashed, crashes, landed, applied, unique));
          } else {
            // an unplanned death is a failure of the run, never restarted away; so is a halt
            // that did not land where planned (another point, or outside the broker call)
            unexpectedExits++;
            out.accept(tag + "consumer died unplanned (status " + status + (status == CrashInjector.EXIT_STATUS
                && crashPoint != null ? ", not halted at " + crashPoint + (brokerCallPoint() ? " inside a "
                + broker.name() + " broker call" : "") : "")
                + "): the run FAILS; last output: " + tail(child));
            break;
          }
          child = startConsumer(destination, receiptsQueue, group, db, unique, children.size() + 1, crashed, random);
          children.add(child);
          continue;
        }
        if (now - lastReport > 2_000_000_000L) {
          lastReport = now;
          out.accept(String.format(Locale.ROOT, "%s%,d/%,d orders applied (%d%%), %d/%d crashes%s, %.1f s",
              tag, applied, unique, applied * 100 / Math.max(1, unique), crashed, crashes,
              receipts ? String.format(Locale.ROOT, "; %,d receipts published, %,d applied, %d/%d relay crashes",
                  db.receiptsPublished(receiptsDestination), db.ordersReceipted(), relayCrashed, relayCrashes) : "",
              (now - start) / 1e9));
        }
        boolean allApplied = applied >= unique - (replayPending ? failing.size() : 0)
            && broker.deadLettered(destination) >= poisonMessages + (replayPending ? failing.size() : 0);
        boolean drained = allApplied && broker.pending(destination, group) == 0
            // the failing orders have no receipt until their replay
            && (!receipts || receiptsSettled(db, receiptsDestination, receiptsQueue, receiptsGroup,
                unique - (replayPending ? failing.size() : 0)));
        if (drained && crashed >= crashes && relayCrashed >= relayCrashes && replayPending) {
          replayPending = false;
          replayed = replay(db, destination, group, failing, unique, tag, deadline);
          timedOut = !replayed && System.nanoTime() > deadline;
          if (timedOut) {
            out.accept(tag + "timed out after " + DurationArgument.format(timeout) + " in the dead-letter replay");
            break;
          }
          continue;
        }
        if (drained && crashed >= crashes && relayCrashed >= relayCrashes) {
          break;
        }
        if (allApplied && crashed < crashes && crashPoint == null) {
          crashAt[crashed] = applied; // finished before the planned point: crash it while it idles
        }
        if (drained && (crashPoint != null || relayCrashed < relayCrashes)) {
          // nothing left to pass the crash point: waiting longer cannot make the crash happen
          idleSince = idleSince == 0 ? now : idleSince;
          if (now - idleSince > IDLE_BEFORE_GIVING_UP.toNanos()) {
            out.accept(tag + "every message was settled before planned " + (crashed < crashes
                ? "crash " + (crashed + 1) + "/" + crashes + " at " + crashPoint + insideBrokerCall()
                : "relay crash " + (relayCrashed + 1) + "/" + relayCrashes) + " could happen: the run FAILS");
            break;
          }
        } else {
          idleSince = 0;
        }
        if (now > deadline) {
          timedOut = true;
          out.accept(String.format(Locale.ROOT, "%stimed out after %s with %,d/%,d orders applied and %d/%d crashes:"
              + " what is not applied yet is reported as such, not as missing", tag, DurationArgument.format(timeout),
              applied, unique, crashed, crashes));
          break;
        }
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      child.stop(Duration.ofSeconds(60));
      if (relay != null) {
        relay.stop(Duration.ofSeconds(60));
      }
      ConsumerOutput seen = ConsumerOutput.of(children);
      // the replayed orders' dead letters are expected (a Kafka topic keeps them); after a failed replay, wrong
      List<DeadLetteredMessage> deadLetters =
          withoutReplayed(broker.readDeadLetters(destination), replayed ? failing : List.of());
      if (!replayed && !timedOut) {
        out.accept(tag + "the dead-letter replay did not complete: its dead letters count as wrong");
      }
      // each crash may leave one more copy of a keyless message, with the same identifiers
      long wrong = DeadLetterCheck.wrong(deadLetters, poisonIds, 1 + crashed);
      if (wrong > 0) {
        out.accept(tag + "dead-letter destination: " + DeadLetterCheck.describe(deadLetters, poisonIds));
      }
      Ledger ledger = new Ledger(broker.name(), stream.events().size() + poisonMessages, unique,
          seen.deliveries(), seen.duplicates(), db.effects(), db.markers(group), db.doubled(), db.missing() + db.unexpected(),
          deadLetters.size(), poisonMessages, wrong, crashed, crashes, crashPoint, seconds, unexpectedExits, maxBatchSize);
      if (receipts) {
        ledger = ledger.withReceipts(new Ledger.Receipts(receiptsQueue, db.receiptsEnqueued(receiptsDestination),
            db.receiptsPublished(receiptsDestination), db.receiptsApplied(), db.receiptsDoubled(),
            db.receiptsMissing(), republished, ConsumerOutput.receipts(children).duplicates(), relayCrashed,
            relayCrashes, relayDeaths));
      }
      if (timedOut) {
        ledger = ledger.withTimedOut(timeout);
      }
      if (!keepSchema && ledger.ok()) {
        db.dropSchema();
        broker.deleteDestination(destination);
        if (receipts) {
          broker.deleteDestination(receiptsQueue);
        }
      }
      return ledger;
    }
  }

  private void publish(
      String destination, OrderEvents stream, List<String> poisonIds, Random random, String tag) {
    List<Outbound> all = new ArrayList<>();
    for (OrderEvents.Event e : stream.events()) {
      all.add(Outbound.keyed(e.orderId(), e.payload()));
    }
    for (String poisonId : poisonIds) {
      all.add(random.nextInt(all.size() + 1), DeadLetterCheck.keyless(poisonId));
    }
    int sent = 0;
    for (int from = 0; from < all.size(); from += 1000) {
      List<Outbound> batch = all.subList(from, Math.min(all.size(), from + 1000));
      broker.publish(destination, batch);
      sent += batch.size();
      if (sent % 5000 == 0) {
        out.accept(String.format(Locale.ROOT, "%spublished %,d/%,d", tag, sent, all.size()));
      }
    }
  }

  private ChildJvm startConsumer(String destination, String receiptsQueue, String group, DemoDatabase db,
      long unique, int generation, int crashed, Random random) {
    List<String> jvmArgs = new ArrayList<>();
    if (failSwitch != null) {
      jvmArgs.add("-D" + FailingOrders.PROPERTY + "=" + failSwitch);
    }
    if (crashPoint != null && crashed < crashes) {
      jvmArgs.add("-Didem.crash.point=" + crashPoint.name());
      jvmArgs.add("-Didem.crash.after=" + crashAfter(passesAtLeast(destination, unique - db.ordersApplied()),
          crashes - crashed, random));
      // DURING_ACK and DEAD_LETTER_COPY_STORED inside the consumer's broker calls, never from a helper thread
      jvmArgs.add("-Didem.crash.broker-calls=intercepted");
      jvmArgs.addAll(broker.consumerJvmArgs(crashPoint));
    }
    return ConsumerProcess.start("consumer-" + generation, List.of(broker), List.of(destination),
        receipts ? receiptsQueue : null, group, db.schema, maxBatchSize, jvmArgs, out);
  }

  /**
   * The fewest passes of the crash point the rest of the run makes: one per order left at the
   * pipeline's points, the broker's settling calls for them at {@code DURING_ACK}, one per keyless
   * message not yet dead-lettered at {@code DEAD_LETTER_COPY_STORED}.
   */
  private long passesAtLeast(String destination, long ordersLeft) {
    return switch (Objects.requireNonNull(crashPoint)) {
      case DURING_ACK -> broker.settlingCallsAtLeast(ordersLeft, maxBatchSize);
      case DEAD_LETTER_COPY_STORED -> Math.max(0, poisonMessages - broker.deadLettered(destination));
      default -> ordersLeft;
    };
  }

  /** Whether the planned crash point is one the consumer places inside its broker calls. */
  private boolean brokerCallPoint() {
    return crashPoint == CrashPoint.DURING_ACK || crashPoint == CrashPoint.DEAD_LETTER_COPY_STORED;
  }

  private String insideBrokerCall() {
    return brokerCallPoint() ? " (never reached by a " + broker.name() + " broker call)" : "";
  }

  /** A relay that pauses for its SIGKILL after a share of the receipts still to publish, while kills are planned. */
  private ChildJvm startRelay(DemoDatabase db, String receiptsDestination, long unique, int generation,
      int relayCrashes, int relayCrashed, Random random) {
    long pauseAfter = relayCrashed < relayCrashes
        ? crashAfter(unique - db.receiptsPublished(receiptsDestination), relayCrashes - relayCrashed, random) : -1;
    return RelayProcess.start("relay-" + generation, broker, db.schema, pauseAfter, out);
  }

  /** Every order's receipt applied, every outbox row sent, nothing left in the receipts destination. */
  private boolean receiptsSettled(DemoDatabase db, String receiptsDestination, String receiptsQueue,
      String receiptsGroup, long unique) {
    return db.ordersReceipted() >= unique
        && db.receiptsPublished(receiptsDestination) >= db.receiptsEnqueued(receiptsDestination)
        && broker.pending(receiptsQueue, receiptsGroup) == 0;
  }

  /** The outbox rows a pausing relay printed as confirmed by the broker, distinct. */
  private static List<Long> confirmedRows(ChildJvm relay) {
    return relay.lines().stream().filter(l -> l.startsWith(RelayProcess.CONFIRMED_PREFIX))
        .map(l -> Long.parseLong(l.substring(RelayProcess.CONFIRMED_PREFIX.length()).trim())).distinct().toList();
  }

  /** The outbox row id of a paused relay's {@code RELAY-PAUSED <id> <key>} line. */
  private static long pausedRow(ChildJvm relay) {
    return relay.lines().stream().filter(l -> l.startsWith(RelayProcess.PAUSED_PREFIX)).findFirst()
        .map(l -> Long.parseLong(l.substring(RelayProcess.PAUSED_PREFIX.length()).split(" ")[0]))
        .orElseThrow(() -> new IllegalStateException("the relay printed no " + RelayProcess.PAUSED_PREFIX + "line"));
  }

  /** The orders that fail until the replay: {@code replayDeadLetters} of them, chosen by the run's seed. */
  private List<String> failingOrders(OrderEvents stream, Random random) {
    List<String> ids = new ArrayList<>(stream.orderIds());
    java.util.Collections.shuffle(ids, random);
    return List.copyOf(ids.subList(0, Math.min(replayDeadLetters, ids.size())));
  }

  /**
   * The replay step: the failure switched off, the failing orders' dead letters replayed with
   * {@code --keep} (each order applied once, the dead letters kept), then replayed again (every copy
   * a duplicate, the dead letters removed). Whether both replays succeeded and every order was
   * applied.
   */
  private boolean replay(DemoDatabase db, String destination, String group, List<String> failing, long unique,
      String tag, long deadline) throws InterruptedException {
    try {
      java.nio.file.Files.deleteIfExists(java.util.Objects.requireNonNull(failSwitch));
    } catch (java.io.IOException e) {
      throw new IllegalStateException("could not switch the failure off: " + e.getMessage(), e);
    }
    out.accept(tag + "the failure is switched off; replaying the dead letters of the " + failing.size()
        + " orders with idem-cli dead-letters replay --cause NON_RETRYABLE --keep");
    Consumer<String> indented = line -> out.accept(tag + "  " + line);
    DeadLetterTool.Result first = DeadLetterTool.run(broker, destination, db.schema, "replay",
        List.of("--cause", "NON_RETRYABLE", "--keep"), indented);
    while (db.ordersApplied() < unique && System.nanoTime() < deadline) {
      Thread.sleep(POLL.toMillis());
    }
    out.accept(String.format(Locale.ROOT, "%sreplay 1: %d dead letters copied back (exit %d); %,d/%,d orders applied",
        tag, first.count(io.idem.deadletters.ActionResult.Outcome.COPIED), first.exit(), db.ordersApplied(), unique));
    out.accept(tag + "replaying the same dead letters again, and removing them: idem-cli dead-letters replay --cause"
        + " NON_RETRYABLE");
    DeadLetterTool.Result second = DeadLetterTool.run(broker, destination, db.schema, "replay",
        List.of("--cause", "NON_RETRYABLE"), indented);
    while (broker.pending(destination, group) > 0 && System.nanoTime() < deadline) {
      Thread.sleep(POLL.toMillis());
    }
    out.accept(String.format(Locale.ROOT, "%sreplay 2: %d dead letters replayed again (exit %d); orders applied"
            + " twice: %d", tag, second.count(io.idem.deadletters.ActionResult.Outcome.REPLAYED), second.exit(),
        db.doubled()));
    return first.exit() == 0 && second.exit() == 0 && db.ordersApplied() >= unique;
  }

  /** {@code found} without the failing orders' dead letters (a Kafka topic keeps the replayed ones). */
  private static List<DeadLetteredMessage> withoutReplayed(List<DeadLetteredMessage> found, List<String> failing) {
    if (failing.isEmpty()) {
      return found;
    }
    java.util.Set<String> ids = java.util.Set.copyOf(failing);
    return found.stream().filter(d -> !("NON_RETRYABLE".equals(d.cause())
        && ids.contains(d.headers().get(io.idem.DeadLetterReason.HEADER_KEY)))).toList();
  }

  /**
   * How many passes of the crash point the next consumer makes before it halts: at most an even
   * share of the orders still to apply, so that every remaining planned crash still finds a new
   * order to halt on (the points after the handler are passed by new orders only).
   */
  static long crashAfter(long ordersLeft, int crashesLeft, Random random) {
    long share = Math.max(0, ordersLeft) / (crashesLeft + 1);
    if (share < 2) {
      return 0;
    }
    long floor = share / 5;
    return floor + (long) (random.nextDouble() * (share - floor));
  }

  /**
   * Where the child's {@code IDEM-CRASH <point> <where>} line (in {@code lines}) says it halted,
   * when that is {@code planned} and, for the points inside broker calls, a broker call ({@link
   * BrokerCallCrashes#OPERATION_PREFIX}); otherwise {@code null}: the halt was not the planned one
   * (another point, a helper thread's halt naming a key, or no point planned at all).
   */
  static @Nullable String landedAt(List<String> lines, @Nullable CrashPoint planned) {
    if (planned == null) {
      return null; // SIGKILLs only: a consumer that halted itself was not planned to
    }
    String prefix = "IDEM-CRASH " + planned.name() + " ";
    boolean insideBrokerCall = planned == CrashPoint.DURING_ACK || planned == CrashPoint.DEAD_LETTER_COPY_STORED;
    return lines.stream().filter(l -> l.startsWith(prefix)).findFirst()
        .map(l -> l.substring(prefix.length()))
        .filter(where -> !insideBrokerCall || where.startsWith(BrokerCallCrashes.OPERATION_PREFIX))
        .map(where -> planned + " " + (insideBrokerCall
            ? "inside " + where.substring(BrokerCallCrashes.OPERATION_PREFIX.length()) : "(key " + where + ")"))
        .orElse(null);
  }

  private static String tail(ChildJvm child) {
    List<String> lines = child.lines();
    return String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
  }

  /** Builder of a {@link LedgerRun}. Not thread-safe. */
  public static final class Builder {
    private final DemoBroker broker;
    private int events = 10_000;
    private double duplicateRate = 0.2;
    private int crashes = 3;
    private @Nullable CrashPoint crashPoint;
    private int poisonMessages;
    private long seed = System.nanoTime();
    private Duration timeout = Duration.ofMinutes(10);
    private boolean keepSchema;
    private int maxBatchSize = 1;
    private boolean receipts;
    private int replayDeadLetters;
    private @Nullable String database;
    private Consumer<String> out = System.out::println;

    private Builder(DemoBroker broker) {
      this.broker = Objects.requireNonNull(broker, "broker");
    }

    /** Messages to publish, retries included; default 10,000. */
    public Builder events(int value) {
      this.events = value;
      return this;
    }

    /** Share of events that are producer retries; default 0.2. */
    public Builder duplicateRate(double value) {
      this.duplicateRate = value;
      return this;
    }

    /** How many times the consumer crashes; default 3. */
    public Builder crashes(int value) {
      this.crashes = value;
      return this;
    }

    /** Where the consumer halts itself; default {@code null}: SIGKILL at random moments. */
    public Builder crashPoint(@Nullable CrashPoint value) {
      this.crashPoint = value;
      return this;
    }

    /** Extra messages without a key, which must all be dead-lettered; default 0. */
    public Builder poisonMessages(int value) {
      this.poisonMessages = value;
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

    /** Keep the PostgreSQL schema and the destination after a successful run; default false. */
    public Builder keepSchema(boolean value) {
      this.keepSchema = value;
      return this;
    }

    /**
     * Most messages per transaction in the consumer ({@code --batch}); default 1, per-message
     * mode. A broker whose adapter has no batch mode fails the run when it is above 1.
     */
    public Builder maxBatchSize(int value) {
      this.maxBatchSize = value;
      return this;
    }

    /**
     * Whether the handlers also enqueue receipts that a relay (killed as often as the consumer)
     * publishes and a downstream consumer applies ({@code --receipts}); default false.
     */
    public Builder receipts(boolean value) {
      this.receipts = value;
      return this;
    }

    /**
     * How many orders fail non-retryably (and are dead-lettered with their reason) until the run,
     * once everything else is applied, switches the failure off and replays them twice with the
     * dead-letter tool ({@code --replay-dead-letters}); default 0: none.
     */
    public Builder replayDeadLetters(int value) {
      this.replayDeadLetters = value;
      return this;
    }

    /** Where progress lines go; default standard output. */
    public Builder output(Consumer<String> value) {
      this.out = Objects.requireNonNull(value, "output");
      return this;
    }

    /**
     * The database, {@code postgresql} or {@code mariadb}; default: the {@value
     * DemoDatabase#DATABASE_PROPERTY} system property's (what {@code --database} sets), else
     * PostgreSQL. Set for the run (its child JVMs get it too), restored after.
     */
    public Builder database(String value) {
      this.database = DemoDatabase.kindOf(value);
      return this;
    }

    public LedgerRun build() {
      if (events < 1) {
        throw new IllegalArgumentException("events must be >= 1, but was " + events);
      }
      if (!(duplicateRate >= 0 && duplicateRate < 1)) {
        throw new IllegalArgumentException("duplicateRate must be in [0, 1), but was " + duplicateRate);
      }
      if (crashes < 0) {
        throw new IllegalArgumentException("crashes must be >= 0, but was " + crashes);
      }
      if (maxBatchSize < 1) {
        throw new IllegalArgumentException("maxBatchSize must be >= 1, but was " + maxBatchSize);
      }
      if (replayDeadLetters < 0 || replayDeadLetters > events / 2) {
        throw new IllegalArgumentException("replayDeadLetters must be in [0, events / 2], but was " + replayDeadLetters);
      }
      if (poisonMessages < 0) {
        throw new IllegalArgumentException("poisonMessages must be >= 0, but was " + poisonMessages);
      }
      if (crashPoint == CrashPoint.DEAD_LETTER_COPY_STORED && crashes > 0 && poisonMessages == 0) {
        throw new IllegalArgumentException("crashes at DEAD_LETTER_COPY_STORED need poison messages: nothing"
            + " else is dead-lettered");
      }
      return new LedgerRun(this);
    }
  }
}
