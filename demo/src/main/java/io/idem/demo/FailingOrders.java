package io.idem.demo;

import io.idem.NonRetryableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The main job's {@code --replay-dead-letters}: a set of orders whose handler fails non-retryably
 * while a switch file exists, so that they are dead-lettered with a reason, and applied once the
 * run removed the file and replayed them. The consumer process reads the file named by the system
 * property {@value #PROPERTY} (one order id a line) at start; the parent removes the file to switch
 * the failure off. Thread-safe.
 */
final class FailingOrders {
  /** System property naming the switch file: {@value}. */
  static final String PROPERTY = "idem.demo.fail-orders";

  private static final @Nullable FailingOrders FROM_PROPERTY = load(System.getProperty(PROPERTY));

  private final Path switchFile;
  private final Set<String> orderIds;

  private FailingOrders(Path switchFile, Set<String> orderIds) {
    this.switchFile = switchFile;
    this.orderIds = orderIds;
  }

  /** Writes the switch file for {@code orderIds}; the failure is on while it exists. */
  static Path writeSwitch(Collection<String> orderIds) {
    try {
      Path file = Files.createTempFile("idem-demo-failing-orders", ".txt");
      Files.write(file, orderIds, StandardCharsets.UTF_8);
      file.toFile().deleteOnExit();
      return file;
    } catch (IOException e) {
      throw new IllegalStateException("could not write the failing orders' switch file: " + e.getMessage(), e);
    }
  }

  /** In the consumer: fails {@code orderId} non-retryably while it is one of the failing orders and the switch is on. */
  static void check(String orderId) {
    FailingOrders failing = FROM_PROPERTY;
    if (failing != null && failing.orderIds.contains(orderId) && Files.exists(failing.switchFile)) {
      throw new NonRetryableException("order " + orderId + " is declined by the payment provider (the main job's"
          + " --replay-dead-letters: it fails until the run switches the failure off)");
    }
  }

  private static @Nullable FailingOrders load(@Nullable String file) {
    if (file == null || file.isBlank()) {
      return null;
    }
    Path path = Path.of(file);
    try {
      return new FailingOrders(path, Set.copyOf(Files.readAllLines(path, StandardCharsets.UTF_8)));
    } catch (IOException e) {
      throw new IllegalStateException("-D" + PROPERTY + "=" + file + " cannot be read: " + e.getMessage(), e);
    }
  }
}
