package io.idem.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * A variant's consumer alone in a JVM: the process the crash runs kill with SIGKILL, and the one
 * whose memory the 1,000,000-event run watches. Prints {@code READY} once consuming; with
 * {@code --memory-report} a {@code HEAP <bytes used>} line every 250 ms and, on SIGTERM, {@code
 * HEAP_PEAK <bytes>} (sum of the heap pools' peaks). Runs until killed or SIGTERMed.
 */
@CommandLine.Command(name = "consumer-child", mixinStandardHelpOptions = true)
public final class ConsumerChild implements java.util.concurrent.Callable<Integer> {
  @Option(names = "--variant", required = true) String variant;
  @Option(names = "--bootstrap", required = true) String bootstrap;
  @Option(names = "--topic", required = true) String topic;
  @Option(names = "--group", required = true) String group;
  @Option(names = "--jdbc-url", required = true) String jdbcUrl;
  @Option(names = "--jdbc-user", required = true) String jdbcUser;
  @Option(names = "--jdbc-password", defaultValue = "") String jdbcPassword;
  @Option(names = "--schema", required = true) String schema;
  @Option(names = "--pool", defaultValue = "4") int pool;
  @Option(names = "--max-batch-size", defaultValue = "100") int maxBatchSize;
  @Option(names = "--crash-run") boolean crashRun;
  @Option(names = "--memory-report") boolean memoryReport;

  public static void main(String[] args) {
    System.exit(new CommandLine(new ConsumerChild()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    BenchDatabase db = BenchDatabase.open(jdbcUrl, jdbcUser, jdbcPassword, schema, pool);
    AutoCloseable consumer = Consumers.start(Variant.of(variant),
        new Consumers.Setup(bootstrap, topic, group, maxBatchSize, 1, crashRun), db, new Progress(0));
    CountDownLatch stopped = new CountDownLatch(1);
    ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
    if (memoryReport) {
      sampler.scheduleAtFixedRate(() -> System.out.println("HEAP "
          + ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()), 0, 250, TimeUnit.MILLISECONDS);
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      sampler.shutdownNow();
      try {
        consumer.close();
      } catch (Exception e) {
        System.out.println("close failed: " + e);
      }
      db.dataSource.close();
      if (memoryReport) {
        long peak = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
          if (p.getType() == MemoryType.HEAP) {
            peak += p.getPeakUsage().getUsed();
          }
        }
        System.out.println("HEAP_PEAK " + peak);
      }
      System.out.println("STOPPED");
      System.out.flush();
      stopped.countDown();
    }, "consumer-child-stop"));
    System.out.println("READY");
    System.out.flush();
    stopped.await();
    return 0;
  }
}
