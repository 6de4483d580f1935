package io.idem.demo;

import io.idem.fixtures.ChildJvm;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.OutboxRelay;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The demo's outbox relay, run as a child process that the demo kills: an {@link OutboxRelay} on
 * the demo schema's outbox table, publishing the receipts through the broker's own {@link
 * OutboxPublisher} ({@link DemoBroker#outboxPublisher()}). Arguments: {@code --broker= --schema=}
 * plus the broker's connection arguments.
 *
 * <p>With the system property {@value #PAUSE_AFTER_PROPERTY}{@code =N} the relay prints {@code
 * RELAY-CONFIRMED <row id>} after each publish the broker confirmed, and stops right after its
 * (N+1)-th, before it marks that row sent: it prints {@code RELAY-PAUSED <row id> <key>} and waits
 * there, holding its batch's transaction open, until the
 * demo SIGKILLs it. That is the window no relay can close (the broker and the database share no
 * transaction): the row stays unsent and the next relay publishes it again, which the downstream
 * Idem consumer must skip as a duplicate.
 *
 * <p>Prints {@code READY} once relaying and {@code STOPPED} after a graceful shutdown (SIGTERM).
 */
public final class RelayProcess {
  /** System property: publishes confirmed before the relay pauses in the window; absent = never. */
  static final String PAUSE_AFTER_PROPERTY = "idem.relay.pause.after";
  /** Start of the line printed per confirmed publish of a pausing relay: {@value}, then the row's id. */
  static final String CONFIRMED_PREFIX = "RELAY-CONFIRMED ";
  /** Start of the line printed when the relay pauses: {@value}, then the row's id and key. */
  static final String PAUSED_PREFIX = "RELAY-PAUSED ";
  /** The relay's wait for the demo's SIGKILL when paused, after which it halts itself. */
  private static final Duration PAUSE_LIMIT = Duration.ofMinutes(5);
  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  private RelayProcess() {}

  /**
   * Starts a relay process for {@code broker} (started, in the parent) on the outbox of {@code
   * schema}. Its output lines go to {@code out} indented.
   *
   * @param pauseAfter confirmed publishes before it pauses in the window for its SIGKILL; {@code
   *     -1}: never
   */
  static ChildJvm start(String name, DemoBroker broker, String schema, long pauseAfter, Consumer<String> out) {
    List<String> args = new ArrayList<>(List.of("--broker=" + broker.name(), "--schema=" + schema));
    args.addAll(broker.connectionArgs());
    List<String> jvmArgs = new ArrayList<>(List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-Didem.testcontainers=false", "-Didem.fixtures.announce=false"));
    if (pauseAfter >= 0) {
      jvmArgs.add("-D" + PAUSE_AFTER_PROPERTY + "=" + pauseAfter);
    }
    jvmArgs.addAll(DemoDatabase.childJvmArgs());
    return ChildJvm.start(name, RelayProcess.class, jvmArgs, args, DemoDatabase.childEnvironment(),
        line -> {
          if (!line.contains(CONFIRMED_PREFIX)) { // ChildJvm prefixes "[name] "
            out.accept("  " + line);
          }
        });
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = ConsumerProcess.parse(args);
    DemoDatabase db = DemoDatabase.open(ConsumerProcess.required(options, "schema"), 2);
    DemoBroker broker = DemoBrokers.forConsumer(ConsumerProcess.required(options, "broker"), options);
    OutboxPublisher publisher = broker.outboxPublisher();
    String pauseAfter = System.getProperty(PAUSE_AFTER_PROPERTY);
    OutboxRelay relay = OutboxRelay.builder(db.sessions(),
            pauseAfter == null ? publisher : pausing(publisher, Long.parseLong(pauseAfter)))
        .name("idem-demo-relay")
        .pollInterval(Duration.ofMillis(100))
        // A killed relay's batch comes back to the next relay when its lease ends: short, so the
        // demo's next relay picks it up quickly (the demo's publishes take milliseconds).
        .leaseDuration(Duration.ofSeconds(5))
        .build();
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      relay.close();
      try {
        publisher.close();
      } catch (Exception e) {
        System.err.println("closing the publisher failed: " + e);
      }
      broker.close();
      db.close();
      OUT.println("STOPPED");
      OUT.flush();
      stopped.countDown();
    }, "demo-relay-shutdown"));
    relay.start();
    OUT.println("READY");
    OUT.flush();
    stopped.await();
  }

  /**
   * {@code publisher}, printing each confirmed row and pausing for the SIGKILL right after the
   * (after+1)-th: the lines before the pause are all flushed when the parent sees it.
   */
  static OutboxPublisher pausing(OutboxPublisher publisher, long after) {
    AtomicLong confirmed = new AtomicLong();
    return message -> {
      publisher.publish(message);
      OUT.println(CONFIRMED_PREFIX + message.id());
      OUT.flush();
      if (confirmed.getAndIncrement() == after) {
        pause(message);
      }
    };
  }

  private static void pause(OutboxMessage message) throws InterruptedException {
    OUT.println(PAUSED_PREFIX + message.id() + " " + message.idempotencyKey());
    OUT.flush();
    // the demo kills this JVM now; the latch is never counted down
    new CountDownLatch(1).await(PAUSE_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
    OUT.println("RELAY-NOT-KILLED after " + PAUSE_LIMIT + "; halting");
    OUT.flush();
    Runtime.getRuntime().halt(1);
  }
}
