package io.idem.testkit;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKeyExtractor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The crash matrix as a runner: for each {@link CrashPoint}, and for a process-killing message,
 * it publishes keyed messages to a fresh destination, runs the consumer of a {@link
 * CrashMatrixConsumerFactory} in a child JVM that halts ({@code Runtime.halt}, like {@code kill
 * -9}) at the point, restarts it without a crash until everything is settled, and reports the
 * effects per key: every key applied exactly once, nothing missing, nothing dead-lettered (the
 * poison aside: dead-lettered with {@code MAX_ATTEMPTS_EXCEEDED} after at most maxAttempts deaths,
 * the messages around it applied once; at {@link CrashPoint#DEAD_LETTER_COPY_STORED} the keys whose
 * handler fails dead-lettered, never applied, at most one more copy after the crash). The broker
 * and the database live in the parent (the test JVM) and outlive every child.
 *
 * <pre>{@code
 * CrashMatrixReport report = CrashMatrix.builder(MyCrashFactory.class)
 *     .harness(name -> new MyTopicHarness(name))           // a fresh destination per point
 *     .effects((run, key) -> countRowsOf(key))              // committed effects of a key
 *     .jdbc(new CrashMatrix.Jdbc(url, user, password, schema))
 *     .property("bootstrap", bootstrapServers)
 *     .run();
 * report.assertPassed();
 * }</pre>
 *
 * <p>Per point: {@link Builder#messages} keys {@code <run>-<i>} (every fourth also published a
 * second time, as a producer duplicate), header {@link Builder#keyHeader}. The crash life halts on
 * the {@link Builder#crashAfter}+1-th pass of the point; it must halt within {@link
 * Builder#timeout} and print its {@code IDEM-CRASH} line, or the point fails naming it. Each
 * later life gets {@link Builder#timeout} to settle everything (the harness's {@link
 * BrokerHarness#pendingCount()} 0, every key applied), then is told to stop and must exit 0. A
 * child that neither dies nor settles in time is destroyed and the point fails. The child's
 * classpath is this JVM's {@code java.class.path} (the test classpath, surefire's manifest jar
 * included), so the factory class and the adapter must be on it. Not thread-safe: one run at a
 * time; each point is quick (a few seconds plus two JVM starts) with the default 20 messages.
 */
public final class CrashMatrix {
  /** The name of the process-killing-message point in the report: {@value}. */
  public static final String POISON = CrashInjector.POISON;

  /**
   * The header ({@value}, value {@code true}) of the messages whose handler must fail with a
   * {@link io.idem.NonRetryableException} at {@link CrashPoint#DEAD_LETTER_COPY_STORED}, so that
   * they are dead-lettered: {@link CrashMatrixContext#kitPipeline} does, a user's handler is
   * wrapped with {@link CrashMatrixContext#deadLettering}.
   */
  public static final String DEAD_LETTER_HEADER = "crash-matrix-dead-letter";

  /**
   * The database the child's {@link CrashMatrixContext#dataSource()} connects to.
   *
   * @param url a JDBC URL whose driver is on the classpath
   * @param user the user ("" for the driver's default)
   * @param password the password ("" for none)
   * @param schema the schema to use (pgjdbc {@code currentSchema}; "" for the default)
   */
  public record Jdbc(String url, String user, String password, String schema) {
    public Jdbc {
      Objects.requireNonNull(url, "url");
      Objects.requireNonNull(user, "user");
      Objects.requireNonNull(password, "password");
      Objects.requireNonNull(schema, "schema");
    }

    /**
     * URL, user and schema of a connection of {@code dataSource} (which it cannot tell: the
     * password is {@code password}).
     */
    public static Jdbc of(javax.sql.DataSource dataSource, String password) {
      try (java.sql.Connection c = dataSource.getConnection()) {
        String schema = c.getSchema();
        return new Jdbc(c.getMetaData().getURL(), c.getMetaData().getUserName(), password,
            schema == null ? "" : schema);
      } catch (java.sql.SQLException e) {
        throw new IllegalStateException("could not read the JDBC settings of " + dataSource + ": " + e, e);
      }
    }

    @Override
    public String toString() {
      return "Jdbc[" + url + ", user " + user + ", schema " + schema + "]";
    }
  }

  /** Committed effects per key, read in the parent (for example rows of a business table). */
  @FunctionalInterface
  public interface EffectCounter {
    /**
     * @param runId the point's run id ({@link CrashMatrixContext#runId()} in the child)
     * @param key the message key
     * @return how many times the key's effect is committed
     */
    int count(String runId, String key) throws Exception;
  }

  private final Builder b;
  private final Function<String, BrokerHarness> harnesses;
  private final EffectCounter effectCounter;

  private CrashMatrix(Builder builder, Function<String, BrokerHarness> harnesses, EffectCounter effects) {
    this.b = builder;
    this.harnesses = harnesses;
    this.effectCounter = effects;
  }

  /** A runner for the consumer that {@code factory} starts in the child JVM. */
  public static Builder builder(Class<? extends CrashMatrixConsumerFactory> factory) {
    return new Builder(factory);
  }

  /** Runs every point, one after another; never throws for a broken guarantee (see the report). */
  public CrashMatrixReport run() {
    List<CrashMatrixReport.Point> results = new ArrayList<>();
    for (CrashPoint point : b.points) {
      results.add(runPoint(point.name(), point));
    }
    if (b.poisonMessage) {
      results.add(runPoint(POISON, null));
    }
    return new CrashMatrixReport(results);
  }

  private CrashMatrixReport.Point runPoint(String name, @Nullable CrashPoint point) {
    String run = UUID.randomUUID().toString().substring(0, 8);
    String slug = name.toLowerCase(Locale.ROOT).replace('_', '-');
    String group = "crash-" + slug + "-" + run;
    List<String> problems = new ArrayList<>();
    List<CrashMatrixReport.Life> lives = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    List<String> deadLetterKeys = new ArrayList<>();
    @Nullable String poisonKey = point == null ? run + "-poison" : null;
    Map<String, Integer> effects = new LinkedHashMap<>();
    List<String> doubled = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    List<DeadLetteredMessage> deadLetters = new ArrayList<>();
    try (BrokerHarness harness = harnesses.apply("crash-" + slug + "-" + run)) {
      harness.useConsumerGroup(group);
      for (int i = 0; i < b.messages; i++) {
        String key = run + "-" + i;
        if (point == CrashPoint.DEAD_LETTER_COPY_STORED && i % 4 == 3) {
          // dead-lettered by the handler (never a producer duplicate: that would be a replay)
          deadLetterKeys.add(key);
          harness.publish(Map.of(b.keyHeader, key, DEAD_LETTER_HEADER, "true"), b.payload.apply(key));
          continue;
        }
        keys.add(key);
        publish(harness, key);
        if (i % 4 == 1) {
          publish(harness, key); // a producer duplicate
        }
        if (poisonKey != null && i == 1) {
          publish(harness, poisonKey); // behind two good messages, ahead of the rest
        }
      }
      List<String> jvmArgs = baseJvmArgs(harness, name, group, run);
      Lives state = new Lives(harness, keys, deadLetterKeys, poisonKey, run);
      if (point != null && !crashLife(name, point, jvmArgs, state, lives, problems)) {
        return collect(name, group, state, effects, doubled, missing, deadLetters, lives, problems, false);
      }
      int deaths = 0;
      for (int life = 1; ; life++) {
        List<String> args = new ArrayList<>(jvmArgs);
        if (poisonKey != null) {
          args.add("-Didem.crash.poison-key=" + poisonKey);
        }
        String label = name + "-life-" + life;
        try (CrashMatrixChildProcess child = CrashMatrixChildProcess.start(label, args, b.factory.getName())) {
          boolean settled = awaitDeathOrSettled(child, state);
          if (!child.isAlive()) {
            Integer status = child.waitFor(Duration.ofSeconds(10));
            String crash = crashLine(child, CrashInjector.POISON);
            lives.add(new CrashMatrixReport.Life(label, status, crash, child.lines()));
            if (poisonKey != null && crash != null) {
              deaths++;
              if (deaths > b.maxAttempts) {
                problems.add("the process-killing message " + poisonKey + " killed the consumer " + deaths
                    + " times and was not dead-lettered (maxAttempts " + b.maxAttempts + ")");
                break;
              }
              continue;
            }
            problems.add(label + " exited with status " + status + " before everything was settled"
                + " (no planned crash)");
            break;
          }
          if (!settled) {
            child.destroy();
            lives.add(new CrashMatrixReport.Life(label, null, null, child.lines()));
            problems.add(label + " did not settle every message within " + b.timeout + ": " + state.describe()
                + "; destroyed");
            return collect(name, group, state, effects, doubled, missing, deadLetters, lives, problems, false);
          }
          child.requestStop();
          Integer status = child.waitFor(b.timeout);
          if (status == null) {
            child.destroy();
            problems.add(label + " did not stop within " + b.timeout + " after its input was closed; destroyed");
          } else if (status != 0) {
            problems.add(label + " exited with status " + status + " when told to stop");
          }
          lives.add(new CrashMatrixReport.Life(label, status, null, child.lines()));
          break;
        }
      }
      return collect(name, group, state, effects, doubled, missing, deadLetters, lives, problems, true);
    }
  }

  /** The first life, which must halt at {@code point}; false when it did not (the point failed). */
  private boolean crashLife(String name, CrashPoint point, List<String> jvmArgs, Lives state,
      List<CrashMatrixReport.Life> lives, List<String> problems) {
    List<String> args = new ArrayList<>(jvmArgs);
    args.add("-Didem.crash.point=" + point.name());
    // the dead-letter copies are a quarter of the messages: halt at one of them, the last at most
    int after = point == CrashPoint.DEAD_LETTER_COPY_STORED
        ? Math.min(b.crashAfter, state.deadLetterKeys.size() - 1)
        : b.crashAfter;
    args.add("-Didem.crash.after=" + after);
    if (b.interceptedBrokerCalls || point == CrashPoint.DEAD_LETTER_COPY_STORED) {
      args.add("-Didem.crash.broker-calls=intercepted");
    }
    String label = name + "-crash";
    try (CrashMatrixChildProcess child = CrashMatrixChildProcess.start(label, args, b.factory.getName())) {
      Integer status = child.waitFor(b.timeout);
      if (status == null) {
        child.destroy();
        lives.add(new CrashMatrixReport.Life(label, null, null, child.lines()));
        problems.add("the child did not crash at " + point + " within " + b.timeout + " (" + state.describe()
            + "); destroyed");
        return false;
      }
      String crash = crashLine(child, point.name());
      lives.add(new CrashMatrixReport.Life(label, status, crash, child.lines()));
      if (status != CrashInjector.EXIT_STATUS || crash == null) {
        problems.add("the child exited with status " + status + " without crashing at " + point);
        return false;
      }
      return true;
    }
  }

  /**
   * Waits until the child died, or settled everything, or went idle: nothing pending on the broker
   * and no output line for {@link Builder#idle} — nothing more will come (a lost message); the
   * evaluation then names what is missing. False only when the child died or the timeout passed.
   */
  private boolean awaitDeathOrSettled(CrashMatrixChildProcess child, Lives state) {
    long deadline = System.nanoTime() + b.timeout.toNanos();
    int lastLines = -1;
    long quietSince = System.nanoTime();
    while (System.nanoTime() < deadline) {
      if (!child.isAlive()) {
        return false;
      }
      if (child.printed(CrashMatrixChild.READY)) {
        int lines = child.lines().size();
        if (lines != lastLines) {
          lastLines = lines;
          quietSince = System.nanoTime();
        }
        if (state.settled()) {
          return true;
        }
        if (System.nanoTime() - quietSince > b.idle.toNanos() && state.harness.pendingCount() == 0) {
          return true; // idle: nothing pending, nothing happening
        }
      }
      try {
        Thread.sleep(b.pollInterval.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    }
    return child.isAlive() && state.settled();
  }

  private static @Nullable String crashLine(CrashMatrixChildProcess child, String point) {
    return child.lines().stream().filter(l -> l.startsWith("IDEM-CRASH " + point + " ")).findFirst().orElse(null);
  }

  private CrashMatrixReport.Point collect(String name, String group, Lives state, Map<String, Integer> effects,
      List<String> doubled, List<String> missing, List<DeadLetteredMessage> deadLetters,
      List<CrashMatrixReport.Life> lives, List<String> problems, boolean finished) {
    String run = state.run;
    @Nullable String poisonKey = state.poisonKey;
    List<String> all = new ArrayList<>(state.keys);
    all.addAll(state.deadLetterKeys);
    if (poisonKey != null) {
      all.add(poisonKey);
    }
    List<String> appliedDeadLetters = new ArrayList<>();
    for (String key : all) {
      int count = count(run, key);
      effects.put(key, count);
      boolean mustNotApply = key.equals(poisonKey) || state.deadLetterKeys.contains(key);
      if (count > 1) {
        doubled.add(key);
      } else if (count == 0 && !mustNotApply) {
        missing.add(key);
      } else if (count == 1 && state.deadLetterKeys.contains(key)) {
        appliedDeadLetters.add(key);
      }
    }
    deadLetters.addAll(state.harness.deadLetters());
    if (finished) {
      if (!doubled.isEmpty()) {
        problems.add("applied more than once: " + doubled);
      }
      if (!missing.isEmpty()) {
        problems.add("never applied: " + missing);
      }
      if (!appliedDeadLetters.isEmpty()) {
        problems.add("applied though its handler failed (must be dead-lettered only): " + appliedDeadLetters);
      }
      if (poisonKey != null && effects.getOrDefault(poisonKey, 0) != 0) {
        problems.add("the process-killing message's effect was committed");
      }
      List<DeadLetteredMessage> unexpected = new ArrayList<>();
      Map<String, List<DeadLetteredMessage>> copies = new LinkedHashMap<>();
      boolean poisonDeadLettered = false;
      for (DeadLetteredMessage letter : deadLetters) {
        String key = keyOf(letter);
        if (poisonKey != null && poisonKey.equals(key)) {
          if (!DeadLetterCause.MAX_ATTEMPTS_EXCEEDED.name().equals(letter.cause())) {
            problems.add("the process-killing message was dead-lettered with cause " + letter.cause()
                + ", not " + DeadLetterCause.MAX_ATTEMPTS_EXCEEDED + ": " + letter.detail());
          }
          poisonDeadLettered = true;
        } else if (key != null && state.deadLetterKeys.contains(key)) {
          copies.computeIfAbsent(key, k -> new ArrayList<>()).add(letter);
        } else {
          unexpected.add(letter);
        }
      }
      if (!unexpected.isEmpty()) {
        problems.add("dead-lettered: " + unexpected.stream().map(l -> keyOf(l) + "(" + l.cause() + ")").toList());
      }
      if (poisonKey != null && !poisonDeadLettered) {
        problems.add("the process-killing message " + poisonKey + " is not in the dead-letter destination");
      }
      checkDeadLetterCopies(group, state.deadLetterKeys, copies, problems);
      long pending = state.harness.pendingCount();
      if (pending != 0) {
        problems.add(pending + " message(s) still pending after the last child stopped");
      }
    }
    return new CrashMatrixReport.Point(name, group, effects, doubled, missing, deadLetters, lives, problems);
  }

  /**
   * docs/FAILURES.md "Dead-lettering twice": every failing key in the dead-letter destination
   * with cause NON_RETRYABLE, each copy carrying the consumer group and the key; one copy where the
   * destination drops the second ({@link Builder#deadLetterCopiesDeduplicated}), else at most one
   * more copy per crash (the crash life is the only one that may crash at the point) and the
   * halted key's second copy present.
   */
  private void checkDeadLetterCopies(String group, List<String> deadLetterKeys,
      Map<String, List<DeadLetteredMessage>> copies, List<String> problems) {
    if (deadLetterKeys.isEmpty()) {
      return; // not the dead-letter point
    }
    int most = b.deadLetterCopiesDeduplicated ? 1 : 2;
    List<String> lost = new ArrayList<>();
    List<String> tooMany = new ArrayList<>();
    for (String key : deadLetterKeys) {
      List<DeadLetteredMessage> of = copies.getOrDefault(key, List.of());
      if (of.isEmpty()) {
        lost.add(key);
      } else if (of.size() > most) {
        tooMany.add(key + " x" + of.size());
      }
      for (DeadLetteredMessage copy : of) {
        if (!DeadLetterCause.NON_RETRYABLE.name().equals(copy.cause())
            || !key.equals(copy.headers().get(DeadLetterReason.HEADER_KEY))
            || !group.equals(copy.headers().get(DeadLetterReason.HEADER_CONSUMER_GROUP))) {
          problems.add("a dead-letter copy of " + key + " lacks cause " + DeadLetterCause.NON_RETRYABLE
              + ", its key or its consumer group " + group + ": " + copy.headers());
        }
      }
    }
    if (!lost.isEmpty()) {
      problems.add("failing message(s) not in the dead-letter destination: " + lost);
    }
    if (!tooMany.isEmpty()) {
      problems.add("more dead-letter copies than " + most + " of " + tooMany
          + (b.deadLetterCopiesDeduplicated ? " (the destination should have dropped the second)" : ""));
    }
    if (!b.deadLetterCopiesDeduplicated && lost.isEmpty()
        && copies.values().stream().noneMatch(of -> of.size() == 2)) {
      problems.add("no key has a second dead-letter copy, though the halted copy's original was not removed:"
          + " it must have come back and been dead-lettered again (a destination that drops the second copy:"
          + " deadLetterCopiesDeduplicated(true))");
    }
  }

  private int count(String run, String key) {
    try {
      return effectCounter.count(run, key);
    } catch (Exception e) {
      throw new IllegalStateException("could not count the effects of " + key + ": " + e, e);
    }
  }

  private @Nullable String keyOf(DeadLetteredMessage letter) {
    String key = letter.headers().get(DeadLetterReason.HEADER_KEY);
    return key != null ? key : letter.headers().get(b.keyHeader);
  }

  private void publish(BrokerHarness harness, String key) {
    harness.publish(Map.of(b.keyHeader, key), b.payload.apply(key));
  }

  private List<String> baseJvmArgs(BrokerHarness harness, String name, String group, String run) {
    List<String> args = new ArrayList<>(b.jvmArgs);
    String p = CrashMatrixChild.PREFIX;
    args.add("-D" + p + "point=" + name);
    args.add("-D" + p + "destination=" + harness.destination());
    args.add("-D" + p + "group=" + group);
    args.add("-D" + p + "run=" + run);
    args.add("-D" + p + "max-attempts=" + b.maxAttempts);
    if (b.jdbc != null) {
      args.add("-D" + p + "jdbc.url=" + b.jdbc.url());
      args.add("-D" + p + "jdbc.user=" + b.jdbc.user());
      args.add("-D" + p + "jdbc.password=" + b.jdbc.password());
      args.add("-D" + p + "jdbc.schema=" + b.jdbc.schema());
    }
    Map<String, String> properties = new LinkedHashMap<>(b.properties);
    properties.putAll(b.harnessProperties.apply(harness));
    properties.forEach((k, v) -> args.add("-D" + CrashMatrixChild.PROPERTY_PREFIX + k + "=" + v));
    return args;
  }

  /** What "settled" means for one point, asked while a child lives. */
  private final class Lives {
    private final BrokerHarness harness;
    private final List<String> keys;
    private final List<String> deadLetterKeys;
    private final @Nullable String poisonKey;
    private final String run;

    Lives(BrokerHarness harness, List<String> keys, List<String> deadLetterKeys, @Nullable String poisonKey,
        String run) {
      this.harness = harness;
      this.keys = keys;
      this.deadLetterKeys = deadLetterKeys;
      this.poisonKey = poisonKey;
      this.run = run;
    }

    boolean settled() {
      if (harness.pendingCount() != 0) {
        return false;
      }
      for (String key : keys) {
        if (count(run, key) == 0) {
          return false;
        }
      }
      if (poisonKey == null && deadLetterKeys.isEmpty()) {
        return true;
      }
      Set<String> deadLettered = new java.util.HashSet<>();
      harness.deadLetters().forEach(l -> deadLettered.add(keyOf(l)));
      return (poisonKey == null || deadLettered.contains(poisonKey)) && deadLettered.containsAll(deadLetterKeys);
    }

    String describe() {
      long applied = keys.stream().filter(k -> count(run, k) > 0).count();
      return applied + " of " + keys.size() + " keys applied, " + harness.pendingCount() + " pending, "
          + harness.deadLetters().size() + " dead letter(s)"
          + (deadLetterKeys.isEmpty() ? "" : " (" + deadLetterKeys.size() + " keys to dead-letter)");
    }
  }

  /** Settings of a {@link CrashMatrix}; not thread-safe. */
  public static final class Builder {
    private final Class<? extends CrashMatrixConsumerFactory> factory;
    private @Nullable Function<String, BrokerHarness> harness;
    private @Nullable EffectCounter effects;
    private Set<CrashPoint> points = EnumSet.of(
        CrashPoint.BEFORE_CLAIM, CrashPoint.AFTER_HANDLER, CrashPoint.AFTER_COMMIT, CrashPoint.DURING_ACK);
    private boolean poisonMessage = true;
    private int messages = 20;
    private int crashAfter = 3;
    private int maxAttempts = 3;
    private Duration timeout = Duration.ofSeconds(60);
    private Duration pollInterval = Duration.ofMillis(200);
    private Duration idle = Duration.ofSeconds(10);
    private String keyHeader = IdempotencyKeyExtractor.DEFAULT_HEADER;
    private Function<String, byte[]> payload =
        key -> ("{\"key\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    private @Nullable Jdbc jdbc;
    private final Map<String, String> properties = new LinkedHashMap<>();
    private Function<BrokerHarness, Map<String, String>> harnessProperties = h -> Map.of();
    private final List<String> jvmArgs = new ArrayList<>(List.of("-Xmx256m"));
    private boolean interceptedBrokerCalls;
    private boolean deadLetterCopiesDeduplicated;

    private Builder(Class<? extends CrashMatrixConsumerFactory> factory) {
      this.factory = Objects.requireNonNull(factory, "factory");
    }

    /**
     * Required: a harness on a fresh destination, called once per point with a name safe for
     * broker names ([a-z0-9-], at most 40 characters). The runner publishes through it, asks it
     * for {@link BrokerHarness#pendingCount()} and {@link BrokerHarness#deadLetters()} (told the
     * consumer group with {@link BrokerHarness#useConsumerGroup}), and closes it after the point;
     * {@link BrokerHarness#newConsumer} is never called.
     */
    public Builder harness(Function<String, BrokerHarness> value) {
      this.harness = Objects.requireNonNull(value, "harness");
      return this;
    }

    /** Required: the committed effects of a key, read in this JVM. */
    public Builder effects(EffectCounter value) {
      this.effects = Objects.requireNonNull(value, "effects");
      return this;
    }

    /**
     * The crash points to run, in enum order; default BEFORE_CLAIM, AFTER_HANDLER, AFTER_COMMIT,
     * DURING_ACK. {@link CrashPoint#DEAD_LETTER_COPY_STORED} (not a default) publishes a quarter
     * of the keys with {@link CrashMatrix#DEAD_LETTER_HEADER}, whose handler must fail with a
     * {@link io.idem.NonRetryableException} ({@link CrashMatrixContext#kitPipeline} does; wrap a
     * handler of your own with {@link CrashMatrixContext#deadLettering}), and needs a factory
     * whose broker client calls {@link CrashInjector#atBrokerOperation} with that point once the
     * broker stored a dead-letter copy, before the original is removed (the crash life runs with
     * intercepted broker calls whatever {@link #interceptedBrokerCalls} says). Those keys must
     * end in the dead-letter destination with cause NON_RETRYABLE, each copy carrying the
     * consumer group and the key, never applied; at most two copies each, and two of the halted
     * key (the second stored when its original came back, docs/FAILURES.md "Dead-lettering
     * twice"), or exactly one each with {@link #deadLetterCopiesDeduplicated}.
     */
    public Builder points(CrashPoint... value) {
      EnumSet<CrashPoint> set = EnumSet.noneOf(CrashPoint.class);
      set.addAll(List.of(value));
      this.points = set;
      return this;
    }

    /**
     * Whether to run the process-killing message ({@value CrashMatrix#POISON}); default true.
     * Needs an adapter that counts process deaths (docs/FAILURES.md "Attempts that survive the
     * process"), or the poison kills every life until the runner gives up.
     */
    public Builder poisonMessage(boolean value) {
      this.poisonMessage = value;
      return this;
    }

    /** Keys published per point (a quarter of them twice); default 20, at least 8. */
    public Builder messages(int value) {
      if (value < 8) {
        throw new IllegalArgumentException("messages must be at least 8, got " + value);
      }
      this.messages = value;
      return this;
    }

    /** Passes of the point before the crash life halts; default 3, below {@link #messages}. */
    public Builder crashAfter(int value) {
      if (value < 0) {
        throw new IllegalArgumentException("crashAfter must be >= 0, got " + value);
      }
      this.crashAfter = value;
      return this;
    }

    /**
     * The consumer's maxAttempts, passed to the child ({@link CrashMatrixContext#maxAttempts()});
     * default 3. The poison may kill at most this many lives.
     */
    public Builder maxAttempts(int value) {
      if (value < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, got " + value);
      }
      this.maxAttempts = value;
      return this;
    }

    /** How long each child life may take to crash, to settle, or to stop; default 60 s. */
    public Builder timeout(Duration value) {
      this.timeout = Objects.requireNonNull(value, "timeout");
      return this;
    }

    /**
     * How long a child with nothing pending on the broker may print nothing before the runner
     * takes it that nothing more will come (a lost message) and evaluates; default 10 s. Longer
     * than the consumer's retry backoff.
     */
    public Builder idle(Duration value) {
      this.idle = Objects.requireNonNull(value, "idle");
      return this;
    }

    /** The header carrying the key; default {@link IdempotencyKeyExtractor#DEFAULT_HEADER}. */
    public Builder keyHeader(String value) {
      this.keyHeader = Objects.requireNonNull(value, "keyHeader");
      return this;
    }

    /** The payload of a key's message; default {@code {"key":"<key>"}} in UTF-8. */
    public Builder payload(Function<String, byte[]> value) {
      this.payload = Objects.requireNonNull(value, "payload");
      return this;
    }

    /** The database the child connects to ({@link CrashMatrixContext#dataSource()}); default none. */
    public Builder jdbc(Jdbc value) {
      this.jdbc = Objects.requireNonNull(value, "jdbc");
      return this;
    }

    /** A property passed to the child ({@link CrashMatrixContext#property}). */
    public Builder property(String name, String value) {
      this.properties.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Properties passed to the child. */
    public Builder properties(Map<String, String> value) {
      this.properties.putAll(value);
      return this;
    }

    /**
     * Properties of a point's harness passed to its child (a queue URL), added to {@link
     * #properties}.
     */
    public Builder properties(Function<BrokerHarness, Map<String, String>> value) {
      this.harnessProperties = Objects.requireNonNull(value, "properties");
      return this;
    }

    /** Extra JVM options for the child (default {@code -Xmx256m}), after the build's own. */
    public Builder jvmArgs(List<String> value) {
      this.jvmArgs.addAll(value);
      return this;
    }

    /**
     * The factory wraps its broker client and calls {@link CrashInjector#atBrokerOperation}:
     * {@link CrashPoint#DURING_ACK} then halts inside the settling broker call (the child runs
     * with {@code idem.crash.broker-calls=intercepted}) — the four adapters' kit factories do
     * (Kafka {@code commitSync}, RabbitMQ {@code basicAck}, SQS {@code DeleteMessage} / {@code
     * DeleteMessageBatch}, JMS {@code Session.commit()}). Default false: a helper thread halts the
     * JVM a moment after the commit. {@link CrashPoint#DEAD_LETTER_COPY_STORED} always runs
     * intercepted.
     */
    public Builder interceptedBrokerCalls(boolean value) {
      this.interceptedBrokerCalls = value;
      return this;
    }

    /**
     * The dead-letter destination drops a second copy of a message (an SQS FIFO dead-letter queue;
     * Artemis' duplicate detection in a {@code CLIENT_ACKNOWLEDGE} session — docs/FAILURES.md "The
     * second copy"): {@link CrashPoint#DEAD_LETTER_COPY_STORED} then requires exactly one copy per
     * dead-lettered key. Default false: at most two, and two of some key (the halted one).
     */
    public Builder deadLetterCopiesDeduplicated(boolean value) {
      this.deadLetterCopiesDeduplicated = value;
      return this;
    }

    public CrashMatrix build() {
      Function<String, BrokerHarness> h = harness;
      EffectCounter e = effects;
      if (h == null || e == null) {
        throw new IllegalStateException("harness(...) and effects(...) are required");
      }
      if (crashAfter >= messages) {
        throw new IllegalStateException("crashAfter " + crashAfter + " must be below messages " + messages);
      }
      return new CrashMatrix(this, h, e);
    }

    /** {@link #build()}, then {@link CrashMatrix#run()}. */
    public CrashMatrixReport run() {
      return build().run();
    }
  }
}
