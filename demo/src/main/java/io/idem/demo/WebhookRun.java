package io.idem.demo;

import io.idem.fixtures.ChildJvm;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * {@code --source webhooks}: the OrderPaid stream over HTTP. Each order becomes a Stripe-style
 * event ({@code {"id":"evt_<order>","type":"order.paid","data":{"object":<OrderPaid>}}}; a producer
 * retry is the same event sent again), POSTed by a {@link WebhookSender} with signatures, request
 * timeouts and retries until 2xx, to a {@link WebhookReceiverProcess} in a child JVM that is killed
 * with SIGKILL {@code crashes} times at random moments (requests in flight: before, in and after
 * their transactions) and restarted on the same port. The receiver and the ledger use the run's
 * {@link DemoDatabase} (PostgreSQL, or MariaDB with {@code --database mariadb}: {@link
 * DemoDatabase#kind()}, passed to the receiver's JVM as to the broker consumers'); the ledger is
 * counted there once every event was acknowledged: 0 doubled, 0 missing is the guarantee.
 */
final class WebhookRun {
  private static final int SENDERS = 4;

  private final int events;
  private final double duplicateRate;
  private final int crashes;
  private final long seed;
  private final Duration timeout;
  private final boolean keepSchema;
  private final Consumer<String> out;

  WebhookRun(int events, double duplicateRate, int crashes, long seed, Duration timeout, boolean keepSchema,
      Consumer<String> out) {
    this.events = events;
    this.duplicateRate = duplicateRate;
    this.crashes = crashes;
    this.seed = seed;
    this.timeout = timeout;
    this.keepSchema = keepSchema;
    this.out = out;
  }

  Ledger run() throws Exception {
    String runId = UUID.randomUUID().toString().substring(0, 8);
    String schema = "idem_demo_webhooks_" + runId;
    String secret = "whsec_demo_" + runId;
    OrderEvents stream = OrderEvents.generate(events, duplicateRate, seed, runId);
    List<byte[]> bodies = new ArrayList<>();
    for (OrderEvents.Event e : stream.events()) {
      bodies.add(("{\"id\":\"evt_" + e.orderId() + "\",\"object\":\"event\",\"type\":\"order.paid\",\"data\":{\"object\":"
          + new String(e.payload(), StandardCharsets.UTF_8) + "}}").getBytes(StandardCharsets.UTF_8));
    }
    int port = freePort();
    Random random = new Random(seed);
    Instant deadline = Instant.now().plus(timeout);
    try (DemoDatabase db = DemoDatabase.create(schema)) {
      db.recordPublished(stream.orderIds());
      out.accept("[webhooks] receiver on 127.0.0.1:" + port + ", " + DemoDatabase.describe(schema)
          + "; " + bodies.size() + " events (" + stream.retries() + " producer retries), "
          + SENDERS + " senders, " + crashes + " SIGKILLs");
      long started = System.nanoTime();
      ChildJvm receiver = startReceiver(schema, port, secret);
      WebhookSender sender = new WebhookSender(URI.create("http://127.0.0.1:" + port + WebhookReceiverProcess.PATH), secret);
      AtomicInteger next = new AtomicInteger();
      ExecutorService pool = Executors.newFixedThreadPool(SENDERS);
      List<Future<?>> sending = new ArrayList<>();
      for (int i = 0; i < SENDERS; i++) {
        sending.add(pool.submit(() -> {
          sender.sendAll(bodies, next, deadline);
          return null;
        }));
      }
      int killed = 0;
      int unplanned = 0;
      try {
        for (int crash = 0; crash < crashes; crash++) {
          // a random moment in this crash's share of the stream, with requests in flight
          long at = (long) bodies.size() * crash / crashes
              + random.nextInt(Math.max(1, bodies.size() / (crashes + 1)));
          while (sender.acknowledged.get() < at && Instant.now().isBefore(deadline) && receiver.isAlive()) {
            Thread.sleep(5);
          }
          if (!receiver.isAlive()) {
            unplanned++;
            break;
          }
          receiver.kill();
          killed++;
          out.accept("[webhooks] receiver killed (SIGKILL) after " + sender.acknowledged.get() + " acknowledged events");
          receiver.waitFor(Duration.ofSeconds(30));
          receiver = startReceiver(schema, port, secret);
        }
        for (Future<?> f : sending) {
          f.get(Math.max(1, Duration.between(Instant.now(), deadline).toMillis()), TimeUnit.MILLISECONDS);
        }
        if (!receiver.isAlive()) {
          unplanned++;
        }
      } finally {
        pool.shutdownNow();
        receiver.stop(Duration.ofSeconds(10));
      }
      double seconds = (System.nanoTime() - started) / 1e9;
      if (sender.acknowledged.get() + sender.refused.get() < bodies.size()) {
        throw new IllegalStateException("--timeout " + timeout + " ran out with " + sender.acknowledged.get()
            + " of " + bodies.size() + " events acknowledged");
      }
      Ledger ledger = new Ledger("webhooks", bodies.size(), stream.orderIds().size(), sender.answered.get(),
          sender.duplicates.get(), db.effects(), db.markers(WebhookReceiverProcess.GROUP), db.doubled(),
          db.missing() + db.unexpected(), sender.refused.get(), 0, sender.refused.get(), killed, crashes, null,
          seconds, unplanned, 1);
      out.accept("[webhooks] " + sender.attempts.get() + " HTTP attempts for " + bodies.size() + " events ("
          + (sender.attempts.get() - sender.answered.get()) + " timed out or refused while the receiver was down, "
          + (sender.answered.get() - sender.acknowledged.get() - sender.refused.get()) + " answered 5xx)");
      if (ledger.ok() && !keepSchema) {
        db.dropSchema();
      }
      return ledger;
    }
  }

  private static ChildJvm startReceiver(String schema, int port, String secret) throws InterruptedException {
    List<String> jvmArgs = new ArrayList<>(
        List.of("-Xmx256m", "-XX:+UseSerialGC", "-Didem.testcontainers=false", "-Didem.fixtures.announce=false"));
    jvmArgs.addAll(DemoDatabase.childJvmArgs());
    ChildJvm child = ChildJvm.start("receiver", WebhookReceiverProcess.class, jvmArgs,
        List.of("--schema=" + schema, "--port=" + port, "--secret=" + secret), DemoDatabase.childEnvironment(),
        line -> { });
    Instant until = Instant.now().plus(Duration.ofSeconds(120));
    while (!child.printed("READY")) {
      if (!child.isAlive() || Instant.now().isAfter(until)) {
        throw new IllegalStateException("the webhook receiver did not start: " + child.lines());
      }
      Thread.sleep(20);
    }
    return child;
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
