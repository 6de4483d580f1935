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
import io.idem.testkit.CrashInjector;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * The demo's consumer, run as a child process that the demo kills at random moments. It is what
 * an application using Idem looks like: a MyBatis store, a handler doing one mapper call, and an
 * adapter consumer. Arguments: {@code --broker= --destination= --group= --schema=} plus the
 * broker's connection arguments. Prints {@code READY}, one {@code OUTCOME <outcome>} line per
 * settled delivery, and {@code STOPPED} after a graceful shutdown (SIGTERM).
 */
public final class ConsumerProcess {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  private ConsumerProcess() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = parse(args);
    DemoBroker broker = DemoBrokers.forConsumer(required(options, "broker"), options);
    DemoDatabase db = DemoDatabase.open(required(options, "schema"), 4);
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(db.sessions()).build();

    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup(required(options, "group"))
        .handler((message, session) -> {
          JsonNode order = parseOrder(message);
          session.getMapper(PaymentMapper.class)
              .insertPayment(order.get("orderId").asText(), order.get("amountCents").asLong());
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(10).initialBackoff(Duration.ofMillis(200))
            .maxBackoff(Duration.ofSeconds(2)).build())
        .listener(new IdempotencyListener() {
          @Override
          public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
              ProcessingOutcome outcome, Duration elapsed) {
            synchronized (OUT) {
              OUT.println("OUTCOME " + outcome);
              OUT.flush();
            }
          }
        })
        .listener(CrashInjector.fromSystemProperties())
        .build();

    BrokerConsumer consumer = broker.consumer(required(options, "destination"), pipeline);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      consumer.close();
      broker.close();
      db.close();
      synchronized (OUT) {
        OUT.println("STOPPED");
        OUT.flush();
      }
      stopped.countDown();
    }, "demo-consumer-shutdown"));
    consumer.start();
    synchronized (OUT) {
      OUT.println("READY");
      OUT.flush();
    }
    stopped.await();
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
