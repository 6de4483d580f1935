package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.store.jdbc.Dialect;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Declarables;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter's outbox ({@code idem.outbox.*}, on by default) on MariaDB: the application's only
 * {@code DataSource} is a MariaDB database (as in {@link MariaDbDropInIT}), the starter creates the
 * outbox table with the MariaDB script, an {@code @Idempotent @RabbitListener} enqueues a receipt
 * with {@link IdemOutbox} in Idem's transaction, and the relay the starter built ({@code
 * idem.outbox.publisher=rabbitmq}, the default exchange: the destination is the queue) publishes
 * it once per order — also when the order is delivered twice, and never for an order whose handler
 * failed and rolled back.
 */
@SpringBootTest(classes = MariaDbOutboxIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retry.max-attempts=1",
    "idem.retention.enabled=false",
    "idem.outbox.publisher=rabbitmq",
    "idem.outbox.relay.poll-interval=50ms",
    "logging.level.org.springframework.amqp.rabbit=ERROR"})
class MariaDbOutboxIT extends DropInTest {
  static final String QUEUE = "spring-mariadb-outbox-" + UUID.randomUUID();
  static final String RECEIPTS = QUEUE + ".receipts";

  @DynamicPropertySource
  static void rabbit(DynamicPropertyRegistry registry) {
    DropInTestSupport.rabbitProperties().forEach((name, value) -> registry.add(name, () -> value));
    registry.add("test.queue", () -> QUEUE);
    registry.add("test.receipts", () -> RECEIPTS);
  }

  @Autowired RabbitTemplate template;
  @Autowired DataSource dataSource;
  @Autowired IdemOutboxRelay relay;
  @Autowired Receipts receipts;

  @Override
  public void send(String key, String body) {
    MariaDbDropInIT.send(template, QUEUE, key, body);
  }

  @Test
  void aReceiptIsPublishedOncePerOrderAfterTheCommitAndNeverForARolledBackOne() {
    assertThat(store.delegate().dialect()).isEqualTo(Dialect.MARIADB);
    String key = "k-" + UUID.randomUUID();
    String failed = "k-" + UUID.randomUUID();
    send(key, "order 1");
    send(key, "order 1");
    send(failed, "poison 2");

    await().atMost(WAIT).until(() -> receipts.of(key).size() == 1
        && outcomes.of(key).contains(ProcessingOutcome.DUPLICATE)
        && deadLetters.of(failed) != null);
    assertThat(receipts.of(key)).containsExactly("receipt for order 1");
    assertThat(receipts.of(failed)).isEmpty();
    assertThat(relay.isRunning()).isTrue();
    JdbcTemplate jdbc = new JdbcTemplate(dataSource);
    await().atMost(WAIT).until(() -> jdbc.queryForObject("SELECT count(*) FROM idem_outbox"
        + " WHERE idempotency_key = ? AND sent_at IS NOT NULL", Integer.class, key) == 1);
    assertThat(jdbc.queryForObject("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN (?, ?)",
        Integer.class, key, failed)).as("one row for the order, none for the rolled-back one").isEqualTo(1);
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({MariaDbDropInIT.Database.class, DropInTestSupport.Shared.class, Listeners.class, Receipts.class,
      MariaDbDropInIT.DeadLetters.class})
  static class App {
    /** Deleted by the broker when the test's consumers go: nothing left behind. */
    @Bean
    Declarables mariaDbOutboxQueues() {
      return new Declarables(new Queue(QUEUE, false, false, true),
          new Queue(QUEUE + RabbitDeliveries.DEAD_LETTER_SUFFIX, false, false, true),
          new Queue(RECEIPTS, false, false, true));
    }
  }

  static class Listeners {
    @Autowired DropInTestSupport.Payments payments;
    @Autowired IdemOutbox outbox;

    @RabbitListener(queues = "${test.queue}")
    @Idempotent(consumerGroup = DropInListenerContract.GROUP)
    public void onOrder(Message message) {
      String body = new String(message.getBody(), StandardCharsets.UTF_8);
      outbox.enqueue(RECEIPTS, ("receipt for " + body).getBytes(StandardCharsets.UTF_8));
      payments.apply((String) message.getMessageProperties().getHeaders().get("idempotency-key"), body);
    }
  }

  /** The receipts the relay published, by the order's idempotency key (the relay's message header). */
  static class Receipts {
    private final Map<String, List<String>> byKey = new ConcurrentHashMap<>();

    @RabbitListener(queues = "${test.receipts}")
    public void onReceipt(Message message) {
      Object key = message.getMessageProperties().getHeaders().get("idempotency-key");
      byKey.computeIfAbsent(String.valueOf(key), k -> new CopyOnWriteArrayList<>())
          .add(new String(message.getBody(), StandardCharsets.UTF_8));
    }

    List<String> of(String key) {
      return byKey.getOrDefault(key, List.of());
    }
  }
}
