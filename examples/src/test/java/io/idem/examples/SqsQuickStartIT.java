package io.idem.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.sqs.SqsIdempotentConsumer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * {@link SqsQuickStart} as the README shows it, on a local SQS endpoint (the fixture's: an
 * in-process ElasticMQ without Docker) and real PostgreSQL: the region and static credentials
 * the quick start sets for an endpoint are all the SDK needs there.
 */
class SqsQuickStartIT {

  @Test
  void threeMessagesWithOneDuplicateChargeTwoOrdersOnALocalEndpoint() throws Exception {
    String run = UUID.randomUUID().toString().substring(0, 8);
    SqsFixture sqs = SqsFixture.shared();
    try (SqsClient client = sqs.newClient();
        HikariDataSource dataSource = PostgresFixture.shared().newSchema("examples_sqs")) {
      String queueUrl = sqs.createQueue(client, "orders-" + run, Map.of());
      String dlqUrl = sqs.createQueue(client, "orders-dlq-" + run, Map.of());
      try {
        try (SqsIdempotentConsumer consumer = SqsQuickStart.start(queueUrl, dlqUrl, sqs.endpoint(), dataSource)) {
          for (String key : List.of("order-1", "order-1", "order-2")) { // order-1 is a producer retry
            client.sendMessage(b -> b.queueUrl(queueUrl).messageBody("{\"order\":\"" + key + "\"}")
                .messageAttributes(Map.of("idempotency-key",
                    MessageAttributeValue.builder().dataType("String").stringValue(key).build())));
          }
          // all three settled: deleted after their transactions, none in flight or dead-lettered
          await().atMost(Duration.ofSeconds(30)) // ~2 s; the margin is for a loaded machine
              .until(() -> messages(client, queueUrl) == 0 && chargesPerOrder(dataSource).size() == 2);
        }
        assertThat(chargesPerOrder(dataSource)).isEqualTo(Map.of("order-1", 1, "order-2", 1)); // 2 effects
        assertThat(messages(client, dlqUrl)).isZero();
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
          s.execute("DROP SCHEMA " + dataSource.getSchema() + " CASCADE");
        }
      } finally {
        sqs.deleteQueue(client, queueUrl);
        sqs.deleteQueue(client, dlqUrl);
      }
    }
  }

  /** Visible plus in-flight messages of the queue. */
  private static long messages(SqsClient client, String queueUrl) {
    Map<QueueAttributeName, String> attributes = client.getQueueAttributes(b -> b.queueUrl(queueUrl).attributeNames(
        QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES, QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE))
        .attributes();
    return Long.parseLong(attributes.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES))
        + Long.parseLong(attributes.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
  }

  /** How many times each order was charged (none while the payments table does not exist yet). */
  private static Map<String, Integer> chargesPerOrder(HikariDataSource dataSource) throws Exception {
    Map<String, Integer> charges = new TreeMap<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      if (!c.getMetaData().getTables(null, dataSource.getSchema(), "payments", null).next()) {
        return charges;
      }
      try (ResultSet rs = s.executeQuery("SELECT order_id, count(*) FROM payments GROUP BY order_id")) {
        while (rs.next()) {
          charges.put(rs.getString(1), rs.getInt(2));
        }
      }
    }
    return charges;
  }
}
