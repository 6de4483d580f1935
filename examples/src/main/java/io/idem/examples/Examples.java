package io.idem.examples;

import io.idem.BrokerConsumer;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;

/** What the quick starts' {@code main} methods share: arguments and running until Ctrl-C. */
final class Examples {
  static final String DEFAULT_JDBC_URL = "jdbc:postgresql://localhost:5432/postgres";

  private Examples() {}

  /** The database from {@code args[first..first+2]} (JDBC URL, user, password), with defaults. */
  static DataSource dataSource(String[] args, int first) {
    return Billing.dataSource(
        arg(args, first, DEFAULT_JDBC_URL), arg(args, first + 1, "postgres"), arg(args, first + 2, ""));
  }

  static String arg(String[] args, int index, String fallback) {
    return args.length > index ? args[index] : fallback;
  }

  /** Blocks until the JVM is asked to stop, then closes the consumer (finishing in-flight work). */
  static void runUntilShutdown(BrokerConsumer consumer) throws InterruptedException {
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      consumer.close();
      closed.countDown();
    }, "quick-start-shutdown"));
    closed.await();
  }
}
