package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.IdempotentConsumer;
import io.idem.fixtures.SqsFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import org.apache.ibatis.annotations.Insert;
import org.apache.ibatis.annotations.Param;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/** A quick start like examples' SqsQuickStart, compiled and run as written (between the markers). */
class SqsQuickStartIT {

  /** The application's MyBatis mapper of the quick start. */
  public interface Orders {
    @Insert("INSERT INTO orders (id, body) VALUES (#{id}, #{body})")
    void insert(@Param("id") String id, @Param("body") String body);
  }

  @Test
  void quickStartAppliesARepublishedOrderOnce() throws Exception {
    SqsFixture fixture = SqsFixture.shared();
    try (TestDatabase db = TestDatabase.create("sqs_quick");
        SqsClient sqs = fixture.configure(SqsClient.builder()).httpClient(UrlConnectionHttpClient.create()).build()) {
      try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE TABLE orders (id text NOT NULL, body text NOT NULL)");
      }
      SqlSessionFactory sessions = db.sessions;
      sessions.getConfiguration().addMapper(Orders.class);
      String queueUrl = fixture.createQueue(sqs, "quick-start-" + db.schema.replace('_', '-'), Map.of());
      String dlqUrl = fixture.createQueue(sqs, "quick-start-dlq-" + db.schema.replace('_', '-'), Map.of());

      // ---- README quick start: begin ----
      MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(sessions).createTableIfMissing(true).build();
      IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
          .consumerGroup("billing")
          .handler((message, session) -> session.getMapper(Orders.class)
              .insert(message.header("idempotency-key"), new String(message.payload(), StandardCharsets.UTF_8)))
          .build();
      SqsConsumerConfig config = SqsConsumerConfig.builder(queueUrl) // a standard or a FIFO queue
          .deadLetterQueueUrl(dlqUrl)                                  // or the queue's RedrivePolicy
          .build();
      try (SqsIdempotentConsumer consumer = SqsIdempotentConsumer.create(config, pipeline, sqs)) {
        consumer.start();
        // producers put the business key in the "idempotency-key" message attribute
        for (int i = 0; i < 2; i++) { // sent twice, applied once
          sqs.sendMessage(b -> b.queueUrl(queueUrl).messageBody("{\"order\":42}")
              .messageAttributes(Map.of("idempotency-key",
                  MessageAttributeValue.builder().dataType("String").stringValue("order-42").build())));
        }
        // ---- README quick start: end ----
        await().atMost(Duration.ofSeconds(60)).until(() -> ordersCount(db) == 1 && pending(sqs, queueUrl) == 0);
      }
      assertThat(ordersCount(db)).isEqualTo(1);
      fixture.deleteQueue(sqs, queueUrl);
      fixture.deleteQueue(sqs, dlqUrl);
    }
  }

  private static long pending(SqsClient sqs, String queueUrl) {
    return sqs.getQueueAttributes(b -> b.queueUrl(queueUrl).attributeNames(
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES,
            QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE))
        .attributes().values().stream().mapToLong(Long::parseLong).sum();
  }

  private static int ordersCount(TestDatabase db) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM orders WHERE id = 'order-42'")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
