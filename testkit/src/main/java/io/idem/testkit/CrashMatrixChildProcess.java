package io.idem.testkit;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/** One life of the crash matrix's child JVM: its process and its output lines (stderr merged). */
final class CrashMatrixChildProcess implements AutoCloseable {
  /** Extra JVM options for every child, as for the fixtures' ChildJvm (the build sets C1 only). */
  static final String EXTRA_JVM_ARGS_PROPERTY = "idem.child.jvmArgs";

  private final String name;
  private final Process process;
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final Thread pump;

  private CrashMatrixChildProcess(String name, Process process) {
    this.name = name;
    this.process = process;
    this.pump = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = in.readLine()) != null; ) {
          lines.add(line);
        }
      } catch (IOException ignored) {
        // the child died; its output ends here
      }
    }, "crash-matrix-output-" + name);
    pump.setDaemon(true);
    pump.start();
  }

  static CrashMatrixChildProcess start(String name, List<String> jvmArgs, String factoryClass) {
    List<String> command = new ArrayList<>();
    command.add(Objects.requireNonNull(ProcessHandle.current().info().command().orElse(null),
        "cannot tell this JVM's java executable"));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    String extra = System.getProperty(EXTRA_JVM_ARGS_PROPERTY, "").trim();
    if (!extra.isEmpty()) {
      command.addAll(List.of(extra.split("\\s+")));
    }
    command.addAll(jvmArgs);
    command.add(CrashMatrixChild.class.getName());
    command.add(factoryClass);
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.directory(new File(System.getProperty("user.dir")));
    try {
      return new CrashMatrixChildProcess(name, builder.start());
    } catch (IOException e) {
      throw new IllegalStateException("could not start crash matrix child " + name + ": " + e.getMessage(), e);
    }
  }

  String name() {
    return name;
  }

  List<String> lines() {
    return List.copyOf(lines);
  }

  boolean printed(String prefix) {
    return lines.stream().anyMatch(l -> l.startsWith(prefix));
  }

  boolean isAlive() {
    return process.isAlive();
  }

  /** Closes the child's standard input: the child closes its consumer and exits. */
  void requestStop() {
    try {
      process.getOutputStream().close();
    } catch (IOException ignored) {
      // already gone
    }
  }

  /** Its exit status, or {@code null} when it still runs after {@code timeout}. */
  @org.jspecify.annotations.Nullable Integer waitFor(Duration timeout) {
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        return null;
      }
      pump.join(5_000);
      return process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for crash matrix child " + name, e);
    }
  }

  /** Kills the child (SIGKILL) and waits for it. */
  void destroy() {
    process.destroyForcibly();
    waitFor(Duration.ofSeconds(30));
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      destroy();
    }
  }
}
