package io.idem.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.idem.BrokerConsumer;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.NonRetryableException;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.Outbox;
import io.idem.fixtures.ChildJvm;
import io.idem.testkit.CrashInjector;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The demo's consumer, run as a child process that the demo kills at random moments. It is what
 * an application using Idem looks like: a MyBatis store, a handler doing one mapper call, and an
 * adapter consumer. Arguments: {@code --broker= --destination= --group= --schema=}, optionally
 * {@code --batch=} (most messages per transaction, default 1: per-message mode), plus the
 * brokers' connection arguments; {@code --broker} and {@code --destination} may list several
 * brokers, comma-separated (a migration: one consumer group and one store, an adapter per broker).
 *
 * <p>With {@code --receipts=<destination>} (one broker only) each OrderPaid handler also enqueues a
 * receipt in Idem's outbox, in its own transaction and keyed by the event's idempotency key, and a
 * second, downstream Idem consumer (consumer group {@code <group>}{@value #RECEIPTS_GROUP_SUFFIX})
 * applies the receipts a relay ({@link RelayProcess}) published to that destination into the
 * receipts table. A SIGKILL of this process kills both consumers.
 *
 * <p>With {@code -Didem.crash.point=} (and {@code -Didem.crash.broker-calls=intercepted}, required
 * then) a {@link CrashInjector} halts it at that point; the orders' adapter runs on broker clients
 * wrapped by {@link BrokerCallCrashes}, so {@code DURING_ACK} and {@code DEAD_LETTER_COPY_STORED}
 * halt inside the acknowledging and dead-letter-storing broker calls.
 *
 * <p>Prints {@code READY}, one {@code OUTCOME <outcome> <broker>} line per settled OrderPaid
 * delivery, one {@code RECEIPT-OUTCOME <outcome> <broker>} line per settled receipt, and
 * {@code STOPPED} after a graceful shutdown (SIGTERM).
 */
public final class ConsumerProcess {
  /** Start of the line printed per settled delivery: {@value}, then the outcome and the broker. */
  static final String OUTCOME_PREFIX = "OUTCOME ";
  /** Start of the line printed per settled receipt delivery: {@value}, then the outcome and the broker. */
  static final String RECEIPT_OUTCOME_PREFIX = "RECEIPT-OUTCOME ";
  /** The downstream receipts consumer's group: the orders' group followed by {@value}. */
  static final String RECEIPTS_GROUP_SUFFIX = "-receipts";
  private static final Outbox OUTBOX = Outbox.ofDefaults();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  private ConsumerProcess() {}

  /**
   * Starts a consumer process for {@code brokers} (started, in the parent), each consuming the
   * destination at the same position of {@code destinations}, in consumer group {@code group}
   * with the store in {@code schema}. Its output lines, except the {@code OUTCOME} ones, go to
   * {@code out} indented.
   *
   * @param jvmArgs extra JVM options, e.g. the crash injector's {@code -Didem.crash.point=}
   */
  static ChildJvm start(String name, List<DemoBroker> brokers, List<String> destinations, String group,
      String schema, List<String> jvmArgs, Consumer<String> out) {
    return start(name, brokers, destinations, group, schema, 1, jvmArgs, out);
  }

  /** As above, with at most {@code maxBatchSize} messages per transaction (1: per-message mode). */
  static ChildJvm start(String name, List<DemoBroker> brokers, List<String> destinations, String group,
      String schema, int maxBatchSize, List<String> jvmArgs, Consumer<String> out) {
    return start(name, brokers, destinations, null, group, schema, maxBatchSize, jvmArgs, out);
  }

  /**
   * As above; with {@code receipts} not null (one broker only), the handlers also enqueue a
   * receipt for that destination and a downstream consumer applies the receipts found there.
   */
  static ChildJvm start(String name, List<DemoBroker> brokers, List<String> destinations,
      @Nullable String receipts, String group, String schema, int maxBatchSize, List<String> jvmArgs,
      Consumer<String> out) {
    if (receipts != null && brokers.size() != 1) {
      throw new IllegalArgumentException("receipts run on one broker, but " + brokers.size() + " were given");
    }
    if (brokers.isEmpty() || brokers.size() != destinations.size()) {
      throw new IllegalArgumentException("brokers and destinations must be as many and not empty, but were "
          + brokers.size() + " and " + destinations.size());
    }
    List<String> args = new ArrayList<>(List.of(
        "--broker=" + brokers.stream().map(DemoBroker::name).collect(Collectors.joining(",")),
        "--destination=" + String.join(",", destinations), "--group=" + group, "--schema=" + schema,
        "--batch=" + maxBatchSize));
    if (receipts != null) {
      args.add("--receipts=" + receipts);
    }
    brokers.forEach(b -> args.addAll(b.connectionArgs()));
    List<String> allJvmArgs = new ArrayList<>(List.of("-Xmx256m", "-XX:+UseSerialGC", "-Didem.testcontainers=false",
        "-Didem.fixtures.announce=false"));
    allJvmArgs.addAll(jvmArgs);
    allJvmArgs.addAll(DemoDatabase.childJvmArgs());
    return ChildJvm.start(name, ConsumerProcess.class, allJvmArgs, args, DemoDatabase.childEnvironment(),
        line -> {
          if (!line.contains(OUTCOME_PREFIX)) {
            out.accept("  " + line);
          }
        });
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    List<String> brokerNames = List.of(required(options, "broker").split(","));
    List<String> destinations = List.of(required(options, "destination").split(","));
    if (brokerNames.size() != destinations.size()) {
      throw new IllegalArgumentException("--broker= and --destination= must list as many, but were "
          + brokerNames + " and " + destinations);
    }
    String receipts = options.get("receipts");
    // four connections per consumer: the adapters' default concurrency
    DemoDatabase db = DemoDatabase.open(required(options, "schema"), 4 * (brokerNames.size() + (receipts != null ? 1 : 0)));
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(db.sessions()).build();
    CrashInjector crashes = CrashInjector.fromSystemProperties();
    BrokerCallCrashes brokerCalls = brokerCallCrashes(crashes);
    int maxBatchSize = Integer.parseInt(options.getOrDefault("batch", "1"));
    List<DemoBroker> brokers = new ArrayList<>();
    List<BrokerConsumer> consumers = new ArrayList<>();
    String group = required(options, "group");
    for (int i = 0; i < brokerNames.size(); i++) {
      DemoBroker broker = DemoBrokers.forConsumer(brokerNames.get(i), options);
      brokers.add(broker);
      String receiptsDestination = receipts == null ? null : broker.outboxDestination(receipts);
      // only the orders' consumer passes the crash points, the receipts' consumer runs unwrapped
      consumers.add(broker.consumer(destinations.get(i), pipeline(store, group, broker.name(), crashes,
          receiptsDestination), maxBatchSize, brokerCalls));
      if (receipts != null) {
        consumers.add(broker.consumer(receipts, receiptsPipeline(store, group + RECEIPTS_GROUP_SUFFIX,
            broker.name()), maxBatchSize));
      }
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      consumers.forEach(BrokerConsumer::close);
      brokers.forEach(DemoBroker::close);
      db.close();
      synchronized (OUT) {
        OUT.println("STOPPED");
        OUT.flush();
      }
      stopped.countDown();
    }, "demo-consumer-shutdown"));
    consumers.forEach(BrokerConsumer::start);
    synchronized (OUT) {
      OUT.println("READY");
      OUT.flush();
    }
    stopped.await();
  }

  /**
   * The wrappers of the orders' broker clients when a crash point is planned: the main job's
   * consumer places {@code DURING_ACK} and {@code DEAD_LETTER_COPY_STORED} inside broker calls
   * only, never with the injector's helper-thread fallback, so it must run with {@code
   * -Didem.crash.broker-calls=intercepted}.
   */
  private static @Nullable BrokerCallCrashes brokerCallCrashes(CrashInjector crashes) {
    String point = System.getProperty("idem.crash.point");
    if (point == null || point.isBlank()) {
      return null;
    }
    if (!"intercepted".equals(System.getProperty("idem.crash.broker-calls"))) {
      throw new IllegalArgumentException("-Didem.crash.point=" + point + " needs -Didem.crash.broker-calls=intercepted:"
          + " this consumer places the crash points inside its broker calls, never from a helper thread");
    }
    return new BrokerCallCrashes(crashes);
  }

  // One pipeline per broker, all on the same store and consumer group: a key claimed through one
  // broker is a duplicate on the other.
  // With receipts, the handler also writes the receipt to the outbox in its transaction: it commits
  // exactly when the payment and the marker do, keyed by the event's idempotency key.
  private static IdempotentConsumer<SqlSession> pipeline(MyBatisProcessedEventStore store, String group,
      String brokerName, CrashInjector crashes, @Nullable String receiptsDestination) {
    return IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((key, message, session) -> {
          JsonNode order = parseOrder(message);
          String orderId = order.get("orderId").asText();
          FailingOrders.check(orderId); // --replay-dead-letters: declined until the run switches it off
          long cents = order.get("amountCents").asLong();
          session.getMapper(PaymentMapper.class).insertPayment(orderId, cents);
          if (receiptsDestination != null) {
            OUTBOX.enqueue(session, key, receiptsDestination, receipt(orderId, cents), Map.of("type", "Receipt"));
          }
        })
        .retryPolicy(retryPolicy())
        .listener(outcomes(OUTCOME_PREFIX, brokerName))
        .listener(crashes)
        .build();
  }

  // The downstream consumer: its own consumer group, so a receipt's key (the order event's) is new
  // to it, and a copy the relay published again is a duplicate.
  private static IdempotentConsumer<SqlSession> receiptsPipeline(
      MyBatisProcessedEventStore store, String group, String brokerName) {
    return IdempotentConsumer.builder(store)
        .consumerGroup(group)
        .handler((message, session) -> {
          JsonNode receipt = parseOrder(message);
          session.getMapper(ReceiptMapper.class)
              .insertReceipt(receipt.get("orderId").asText(), receipt.get("amountCents").asLong());
        })
        .retryPolicy(retryPolicy())
        .listener(outcomes(RECEIPT_OUTCOME_PREFIX, brokerName))
        .build();
  }

  private static RetryPolicy retryPolicy() {
    return RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(200))
        .maxBackoff(Duration.ofSeconds(2)).build();
  }

  private static IdempotencyListener outcomes(String prefix, String brokerName) {
    return new IdempotencyListener() {
      @Override
      public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
          ProcessingOutcome outcome, Duration elapsed) {
        synchronized (OUT) {
          OUT.println(prefix + outcome + " " + brokerName);
          OUT.flush();
        }
      }
    };
  }

  private static byte[] receipt(String orderId, long cents) {
    return ("{\"type\":\"Receipt\",\"orderId\":\"" + orderId + "\",\"amountCents\":" + cents + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static JsonNode parseOrder(InboundMessage message) {
    try {
      JsonNode order = JSON.readTree(message.payload());
      if (order == null || !order.hasNonNull("orderId") || !order.hasNonNull("amountCents")) {
        throw new NonRetryableException("not an OrderPaid event: " + message);
      }
      return order;
    } catch (java.io.IOException e) {
      throw new NonRetryableException("payload is not JSON: " + e.getMessage(), e);
    }
  }

  static Map<String, String> parse(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (String arg : args) {
      if (!arg.startsWith("--") || !arg.contains("=")) {
        throw new IllegalArgumentException("arguments are --name=value, but got '" + arg + "'");
      }
      int eq = arg.indexOf('=');
      options.put(arg.substring(2, eq), arg.substring(eq + 1));
    }
    return options;
  }

  static String required(Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null) {
      throw new IllegalArgumentException("--" + name + "= is required");
    }
    return value;
  }
}
