package io.idem.testkit;

import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link CrashMatrix} run found, per point: the effects per key, the keys applied twice or
 * never, the dead letters and every child JVM's life. {@link #assertPassed()} turns the problems
 * into one {@link AssertionError} that shows each failing point's child output. Immutable.
 *
 * @param points one result per point, in the order they ran
 */
public record CrashMatrixReport(List<Point> points) {

  public CrashMatrixReport {
    points = List.copyOf(points);
  }

  /** Every problem of every point, each prefixed with its point's name. */
  public List<String> problems() {
    return points.stream().flatMap(p -> p.problems().stream().map(q -> p.name() + ": " + q)).toList();
  }

  /** The result of the point named {@code name} ({@code CrashPoint.name()} or {@code POISON}). */
  public Point point(String name) {
    return points.stream().filter(p -> p.name().equals(name)).findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no point " + name + " in " + this));
  }

  /**
   * @throws AssertionError naming every problem, with the output of the failing points' children
   */
  public void assertPassed() {
    if (problems().isEmpty()) {
      return;
    }
    StringBuilder message = new StringBuilder("the crash matrix found problems:");
    for (String problem : problems()) {
      message.append("\n  - ").append(problem);
    }
    for (Point point : points) {
      if (point.problems().isEmpty()) {
        continue;
      }
      message.append("\n").append(point.summary());
      for (Life life : point.lives()) {
        List<String> output = life.output();
        message.append("\n--- output of ").append(life.name()).append(" (exit ")
            .append(life.exitStatus() == null ? "none: destroyed" : life.exitStatus()).append(", ")
            .append(output.size()).append(" lines, last 40) ---");
        for (String line : output.subList(Math.max(0, output.size() - 40), output.size())) {
          message.append("\n  ").append(line);
        }
      }
    }
    throw new AssertionError(message.toString());
  }

  /**
   * One point's result.
   *
   * @param name the {@link CrashPoint} name, or {@code POISON} for the process-killing message
   * @param consumerGroup the point's consumer group
   * @param effects committed effects per key (every published key, the poison key included)
   * @param doubledKeys keys with more than one effect
   * @param missingKeys keys that should have been applied and were not
   * @param deadLetters what reached the dead-letter destination
   * @param lives every child JVM started for the point, in order
   * @param problems what broke a guarantee; empty when the point passed
   */
  public record Point(
      String name,
      String consumerGroup,
      Map<String, Integer> effects,
      List<String> doubledKeys,
      List<String> missingKeys,
      List<DeadLetteredMessage> deadLetters,
      List<Life> lives,
      List<String> problems) {

    public Point {
      effects = Map.copyOf(effects);
      doubledKeys = List.copyOf(doubledKeys);
      missingKeys = List.copyOf(missingKeys);
      deadLetters = List.copyOf(deadLetters);
      lives = List.copyOf(lives);
      problems = List.copyOf(problems);
    }

    /** Planned crashes: lives that ended in an {@code IDEM-CRASH} halt. */
    public long crashes() {
      return lives.stream().filter(l -> l.crashLine() != null).count();
    }

    String summary() {
      return name + " (group " + consumerGroup + "): " + effects.size() + " keys, doubled " + doubledKeys
          + ", missing " + missingKeys + ", " + deadLetters.size() + " dead letter(s), lives "
          + lives.stream().map(l -> l.name() + "=" + l.exitStatus()).toList();
    }
  }

  /**
   * One child JVM.
   *
   * @param name its label, e.g. {@code AFTER_COMMIT-crash}, {@code POISON-life-2}
   * @param exitStatus its exit status; {@code null} when the runner had to destroy it
   * @param crashLine its {@code IDEM-CRASH <point> <key>} line, or {@code null} when it did not
   *     halt at a planned point
   * @param output its stdout and stderr lines
   */
  public record Life(String name, @Nullable Integer exitStatus, @Nullable String crashLine, List<String> output) {
    public Life {
      output = List.copyOf(output);
    }
  }
}
