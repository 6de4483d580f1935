package io.idem.sqs;

import static io.idem.spi.OutboxPublishResult.Status.FAILED;
import static io.idem.spi.OutboxPublishResult.Status.SENT;
import static io.idem.spi.OutboxPublishResult.Status.SKIPPED;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.spi.OutboxMessage;
import io.idem.spi.OutboxPublishResult;
import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxEntry;
import io.idem.store.jdbc.OutboxRelay;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * The relay publishing batches to ElasticMQ (or the configured SQS) with {@link
 * SqsOutboxPublisher#publishAll} ({@code SendMessageBatch}, at most 10 rows per request) and
 * PostgreSQL, to a FIFO queue: the requests, a per-entry refusal in the middle of a key, the
 * order of each message group.
 */
class SqsOutboxRelayBatchIT {
  private HikariDataSource pool;
  private HikariDataSource observer;
  private SqlSessionFactory sessions;
  private SqsClient sqs;
  private String queueUrl;
  private final AtomicInteger batchRequests = new AtomicInteger();
  private final AtomicInteger singleRequests = new AtomicInteger();

  @BeforeEach
  void setUp() {
    pool = PostgresFixture.shared().newSchema("sqs_outbox_batch");
    observer = PostgresFixture.shared().dataSource("public", 1);
    sessions = new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), pool)));
    Outbox.createTableIfMissing(pool, Outbox.DEFAULT_TABLE);
    sqs = SqsFixture.shared().configure(SqsClient.builder())
        .overrideConfiguration(c -> c.addExecutionInterceptor(new ExecutionInterceptor() {
          @Override
          public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
            if (context.request() instanceof SendMessageBatchRequest) {
              batchRequests.incrementAndGet();
            } else if (context.request() instanceof SendMessageRequest) {
              singleRequests.incrementAndGet();
            }
          }
        })).build();
    queueUrl = SqsFixture.shared().createQueue(sqs, "idem-batch-" + UUID.randomUUID().toString().substring(0, 8) + ".fifo", Map.of());
  }

  @AfterEach
  void tearDown() {
    SqsFixture.shared().deleteQueue(sqs, queueUrl);
    sqs.close();
    observer.close();
    pool.close();
  }

  private long count(String sql) throws Exception {
    String qualified = sql.replace("idem_outbox", pool.getSchema() + ".idem_outbox");
    try (Connection c = observer.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(qualified)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void enqueue(List<OutboxEntry> entries) {
    Outbox outbox = Outbox.ofDefaults();
    try (SqlSession session = sessions.openSession(false)) {
      entries.forEach(e -> assertThat(outbox.enqueue(session, e)).isTrue());
      session.commit();
    }
  }

  /** Bodies per message group, in the order SQS hands them out (FIFO: per group in send order). */
  private Map<String, List<String>> receive(int count) {
    Map<String, List<String>> perGroup = new HashMap<>();
    int received = 0;
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (received < count && System.nanoTime() < deadline) {
      for (Message m : sqs.receiveMessage(b -> b.queueUrl(queueUrl).maxNumberOfMessages(10).waitTimeSeconds(1)
          .messageSystemAttributeNamesWithStrings("MessageGroupId")).messages()) {
        perGroup.computeIfAbsent(m.attributesAsStrings().get("MessageGroupId"), g -> new ArrayList<>()).add(m.body());
        sqs.deleteMessage(b -> b.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
        received++;
      }
    }
    return perGroup;
  }

  private static OutboxEntry entry(String key, String queue, String orderingKey, Map<String, String> headers) {
    return new OutboxEntry(key, queue, orderingKey, key.getBytes(StandardCharsets.UTF_8), headers);
  }

  private OutboxRelay relay(OutboxPublisher publisher) {
    return OutboxRelay.builder(sessions, publisher).batchSize(50)
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMinutes(1)).jitter(0).build())
        .name("sqs-batch-relay").build();
  }

  /** Records each publishAll's results. */
  private static final class Recording implements OutboxPublisher {
    final SqsOutboxPublisher sqs;
    final List<List<OutboxPublishResult>> batches = new CopyOnWriteArrayList<>();

    Recording(SqsOutboxPublisher sqs) {
      this.sqs = sqs;
    }

    @Override
    public void publish(OutboxMessage message) {
      throw new AssertionError("the relay publishes SQS batches with publishAll");
    }

    @Override
    public List<OutboxPublishResult> publishAll(List<OutboxMessage> messages) {
      List<OutboxPublishResult> results = sqs.publishAll(messages);
      batches.add(results);
      return results;
    }
  }

  @Test
  void twentyFiveRowsAreThreeRequestsAndEachGroupKeepsItsOrder() throws Exception {
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 25; i++) {
      String key = i % 5 == 0 ? null : (i % 2 == 0 ? "A" : "B");
      entries.add(entry((key == null ? "free" : key) + "-" + i, queueUrl, key, Map.of("seq", "" + i)));
    }
    enqueue(entries);
    Recording publisher = new Recording(SqsOutboxPublisher.create(sqs));

    assertThat(relay(publisher).relayOnce()).isEqualTo(25);

    assertThat(publisher.batches).singleElement().satisfies(results ->
        assertThat(results).extracting(OutboxPublishResult::status).containsOnly(SENT));
    assertThat(batchRequests.get()).as("10 + 10 + 5 rows").isEqualTo(3);
    assertThat(singleRequests.get()).isZero();
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE sent_at IS NULL OR attempts <> 1")).isZero();
    Map<String, List<String>> perGroup = receive(25);
    assertThat(perGroup.get("A")).containsExactly("A-2", "A-4", "A-6", "A-8", "A-12", "A-14", "A-16", "A-18",
        "A-22", "A-24");
    assertThat(perGroup.get("B")).containsExactly("B-1", "B-3", "B-7", "B-9", "B-11", "B-13", "B-17", "B-19",
        "B-21", "B-23");
    assertThat(perGroup.values().stream().mapToInt(List::size).sum()).isEqualTo(25);
  }

  /**
   * In the middle of key A one row goes to a queue that does not exist: its request fails, the
   * row is charged one attempt, A's later rows are skipped (not sent, uncharged). Key C's group
   * id is one SQS refuses: its entry fails inside a request whose other entries are sent, and
   * C's second row is skipped. B and the unordered rows are sent in the same batch.
   */
  @Test
  void refusedRowsMidBatchStopTheirKeysWhileOtherKeysAreSent() throws Exception {
    String noQueue = queueUrl.replace("idem-batch-", "idem-batch-missing-");
    List<OutboxEntry> entries = new ArrayList<>();
    for (int i = 1; i <= 6; i++) {
      entries.add(entry("A-" + i, i == 3 ? noQueue : queueUrl, "A", Map.of()));
      entries.add(entry("B-" + i, queueUrl, "B", Map.of()));
      entries.add(entry("free-" + i, queueUrl, null, Map.of()));
      if (i == 2 || i == 4) {
        entries.add(entry("C-" + i, queueUrl, "C é", Map.of()));
      }
    }
    enqueue(entries);
    Recording publisher = new Recording(SqsOutboxPublisher.create(sqs));
    OutboxRelay relay = relay(publisher);

    assertThat(relay.relayOnce()).isEqualTo(20);

    assertThat(publisher.batches.get(0)).extracting(OutboxPublishResult::status).containsExactly(
        SENT, SENT, SENT,  SENT, SENT, SENT, FAILED,  FAILED, SENT, SENT,  SKIPPED, SENT, SENT, SKIPPED,
        SKIPPED, SENT, SENT,  SKIPPED, SENT, SENT);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A-3', 'C-2') AND attempts = 1"
        + " AND sent_at IS NULL AND parked_at IS NULL AND last_error IS NOT NULL")).isEqualTo(2);
    assertThat(count("SELECT count(*) FROM idem_outbox WHERE idempotency_key IN ('A-4', 'A-5', 'A-6', 'C-4')"
        + " AND attempts = 0 AND sent_at IS NULL AND leased_by IS NULL AND next_attempt_at <= now()")).isEqualTo(4);
    assertThat(relay.lastStats().failures()).isEqualTo(2);
    assertThat(relay.health().destinationUnavailableUntil()).isNull();
    Map<String, List<String>> perGroup = receive(14);
    assertThat(perGroup.get("A")).containsExactly("A-1", "A-2");
    assertThat(perGroup.get("B")).containsExactly("B-1", "B-2", "B-3", "B-4", "B-5", "B-6");
    assertThat(perGroup.values().stream().mapToInt(List::size).sum()).isEqualTo(14);
  }

  /** Two rows of 150 KB cannot share a request (256 KiB per request): two requests, in order. */
  @Test
  void rowsThatDoNotFitOneRequestTogetherGoInTheNext() throws Exception {
    String big = "x".repeat(150_000);
    enqueue(List.of(
        new OutboxEntry("A-1", queueUrl, "A", ("A-1 " + big).getBytes(StandardCharsets.UTF_8), Map.of()),
        new OutboxEntry("A-2", queueUrl, "A", ("A-2 " + big).getBytes(StandardCharsets.UTF_8), Map.of()),
        entry("A-3", queueUrl, "A", Map.of())));
    Recording publisher = new Recording(SqsOutboxPublisher.create(sqs));

    assertThat(relay(publisher).relayOnce()).isEqualTo(3);

    assertThat(publisher.batches.get(0)).extracting(OutboxPublishResult::status).containsOnly(SENT);
    assertThat(batchRequests.get()).as("A-1 alone, then A-2 with A-3").isEqualTo(2);
    assertThat(singleRequests.get()).isZero();
    assertThat(receive(3).get("A")).extracting(b -> b.substring(0, 3)).containsExactly("A-1", "A-2", "A-3");
  }
}
