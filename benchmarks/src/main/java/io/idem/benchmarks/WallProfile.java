package io.idem.benchmarks;

import java.lang.reflect.Method;
import java.nio.file.Path;

/**
 * A wall-clock profile of one run, from the consumer's start to its last settled message (the
 * publishing before and the idle wait after are left out): async-profiler's {@code event=wall}
 * sampling every thread every 2 ms, stacks split per thread ({@code threads}), written in
 * collapsed form to {@code <dir>/<run>.collapsed}. async-profiler is not a dependency: its jar
 * ({@code tools.profiler:async-profiler}, which carries the native library) must be on the class
 * path when {@code --profile} is given, and is called reflectively.
 */
final class WallProfile {
  private final Object profiler;
  private final Method execute;
  private final Path file;

  private WallProfile(Object profiler, Method execute, Path file) {
    this.profiler = profiler;
    this.execute = execute;
    this.file = file;
  }

  /** Starts sampling for run {@code run}, written to {@code dir}; null when {@code dir} is null. */
  static @org.jspecify.annotations.Nullable WallProfile start(@org.jspecify.annotations.Nullable Path dir, String run)
      throws Exception {
    if (dir == null) {
      return null;
    }
    Class<?> type;
    try {
      type = Class.forName("one.profiler.AsyncProfiler");
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException("--profile needs async-profiler on the class path"
          + " (tools.profiler:async-profiler, e.g. async-profiler-4.0.jar from Maven Central)", e);
    }
    Object profiler = type.getMethod("getInstance").invoke(null);
    Method execute = type.getMethod("execute", String.class);
    execute.invoke(profiler, "start,event=wall,interval=2ms,threads");
    return new WallProfile(profiler, execute, dir.resolve(run + ".collapsed"));
  }

  /** Stops sampling and writes the stacks. */
  void stop() throws Exception {
    execute.invoke(profiler, "stop,file=" + file + ",collapsed");
  }
}
