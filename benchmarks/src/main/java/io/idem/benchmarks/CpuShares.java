package io.idem.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Who used the machine's CPUs during a run, from Linux's {@code /proc}: the whole machine (busy
 * share of all cores, {@code /proc/stat}), this JVM, the PostgreSQL server of the run (its
 * postmaster and every child; the postmaster's {@code cutime}/{@code cstime} keep the CPU of
 * backends that ended) and a RabbitMQ server ({@code beam.smp}), and everything else. Shares are
 * of all cores together (100 % = every core busy). A server that also serves other clients is
 * counted whole: on a shared PostgreSQL or RabbitMQ, their share includes the others' work.
 * Where {@code /proc} is missing the result is {@code "?"}.
 */
final class CpuShares {
  private final long postmasterPid;
  private long[] start;

  /** @param postmasterPid the PostgreSQL postmaster's pid, or 0 when it is not on this machine */
  CpuShares(long postmasterPid) {
    this.postmasterPid = postmasterPid;
  }

  /** Starts the interval. */
  CpuShares begin() {
    start = sample();
    return this;
  }

  /** The shares since {@link #begin()}, e.g. {@code busy=92% jvm=41% postgres=30% rabbitmq=0% others=21%}. */
  String end() {
    long[] now = sample();
    if (start == null || start[0] < 0 || now[0] < 0) {
      return "?";
    }
    double total = now[0] - start[0];
    if (total <= 0) {
      return "?";
    }
    Map<String, Double> shares = new LinkedHashMap<>();
    shares.put("busy", (now[1] - start[1]) / total);
    shares.put("jvm", (now[2] - start[2]) / total);
    shares.put("postgres", (now[3] - start[3]) / total);
    shares.put("rabbitmq", (now[4] - start[4]) / total);
    shares.put("others", Math.max(0, shares.get("busy") - shares.get("jvm") - shares.get("postgres")
        - shares.get("rabbitmq")));
    StringBuilder b = new StringBuilder();
    shares.forEach((k, v) -> b.append(b.length() == 0 ? "" : " ").append(k).append('=')
        .append(String.format(Locale.ROOT, "%.0f%%", 100 * v)));
    return b.toString();
  }

  /** {total jiffies of all cores, busy jiffies, this JVM, PostgreSQL, beam.smp}; total -1 when unreadable. */
  private long[] sample() {
    long[] s = new long[5];
    try {
      String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < Math.min(cpu.length, 9); i++) { // user nice system idle iowait irq softirq steal
        total += Long.parseLong(cpu[i]);
      }
      long idle = Long.parseLong(cpu[4]) + Long.parseLong(cpu[5]);
      s[0] = total;
      s[1] = total - idle;
    } catch (IOException | RuntimeException e) {
      s[0] = -1;
      return s;
    }
    s[2] = processJiffies(ProcessHandle.current().pid(), false);
    try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
      for (Path p : (Iterable<Path>) procs::iterator) {
        String name = p.getFileName().toString();
        if (!name.chars().allMatch(Character::isDigit)) {
          continue;
        }
        String[] f = stat(Long.parseLong(name));
        if (f == null) {
          continue;
        }
        long pid = Long.parseLong(name);
        if (postmasterPid > 0 && (pid == postmasterPid || Long.parseLong(f[1]) == postmasterPid)) {
          s[3] += jiffies(f, pid == postmasterPid);
        } else if (f[0].equals("beam.smp")) {
          s[4] += jiffies(f, true);
        }
      }
    } catch (IOException | RuntimeException e) {
      // a process list we cannot read: only the machine and this JVM are known
    }
    return s;
  }

  private static long processJiffies(long pid, boolean withChildren) {
    String[] f = stat(pid);
    return f == null ? 0 : jiffies(f, withChildren);
  }

  // f[0] = comm, f[1] = ppid (field 4), f[11] = utime (field 14), f[12] stime, f[13] cutime, f[14] cstime
  private static long jiffies(String[] f, boolean withChildren) {
    long own = Long.parseLong(f[11]) + Long.parseLong(f[12]);
    return withChildren ? own + Long.parseLong(f[13]) + Long.parseLong(f[14]) : own;
  }

  /** {comm, then the fields after it}, or null when the process is gone. */
  private static String[] stat(long pid) {
    try {
      String line = Files.readString(Path.of("/proc/" + pid + "/stat"));
      int open = line.indexOf('(');
      int close = line.lastIndexOf(')');
      String[] rest = line.substring(close + 2).split(" ");
      String[] f = new String[rest.length];
      f[0] = line.substring(open + 1, close);
      System.arraycopy(rest, 1, f, 1, rest.length - 1);
      return f;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** The pid of the postmaster whose backend serves {@code backendPid}, or 0 when it is not on this machine. */
  static long postmasterOf(long backendPid) {
    String[] f = stat(backendPid);
    return f == null ? 0 : Long.parseLong(f[1]);
  }
}
