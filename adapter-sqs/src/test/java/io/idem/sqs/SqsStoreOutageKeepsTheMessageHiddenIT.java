package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * A store outage does not hand the message back to SQS: with a {@code RedrivePolicy} of
 * {@code maxReceiveCount} 2 and a visibility timeout of 2 s, an outage of several retries and
 * several visibility timeouts keeps the message hidden (heartbeat) and in this consumer's hands,
 * its {@code ApproximateReceiveCount} stays 1, nothing is redriven to the dead-letter queue, and
 * once the store is back it is applied once.
 */
class SqsStoreOutageKeepsTheMessageHiddenIT extends SqsTestBase {
  private static final Duration VISIBILITY = Duration.ofSeconds(2);

  @Test
  void outageLongerThanMaxReceiveCountRetriesAppliesTheMessageOnceWithoutARedrive() throws Exception {
    SqsHarness dlqHolder = queue(false);
    String dlqArn = dlqHolder.client().getQueueAttributes(b -> b.queueUrl(dlqHolder.dlqUrl())
        .attributeNames(QueueAttributeName.QUEUE_ARN)).attributes().get(QueueAttributeName.QUEUE_ARN);
    SqsHarness queue = queue(false, Map.of(QueueAttributeName.REDRIVE_POLICY,
        "{\"maxReceiveCount\":\"2\",\"deadLetterTargetArn\":\"" + dlqArn + "\"}"));
    List<Integer> handlerAttempts = new CopyOnWriteArrayList<>();
    RetryPolicy retries = RetryPolicy.builder().maxAttempts(2).initialBackoff(Duration.ofMillis(500))
        .maxBackoff(Duration.ofMillis(500)).multiplier(1.0).jitter(0).build();
    sql("ALTER TABLE " + MyBatisProcessedEventStore.DEFAULT_TABLE + " RENAME TO idem_away");
    start(queue.config().deadLetterQueueUrl(null).visibilityTimeout(VISIBILITY).build(),
        pipeline((message, session) -> {
          handlerAttempts.add(message.deliveryAttempt());
          TestDatabase.record(session, key(message), message.payload());
        }, retries));
    publish(queue, "held-1", "{}");

    await("store retries spanning several visibility timeouts").atMost(TIMEOUT)
        .until(() -> outcomes.count("held-1", ProcessingOutcome.RETRY_STORE_UNAVAILABLE) >= 10);
    assertThat(queue.inFlightCount()).isEqualTo(1);
    assertThat(queue.visibleCount()).isZero();
    assertThat(dlqHolder.deadLetters()).isEmpty();
    assertThat(outcomes.settled()).extracting(s -> s.attempt()).containsOnly(1);

    sql("ALTER TABLE idem_away RENAME TO " + MyBatisProcessedEventStore.DEFAULT_TABLE);
    await("applied after the outage").atMost(TIMEOUT).until(() -> db.count("held-1") == 1);
    await().atMost(TIMEOUT).until(() -> queue.pendingCount() == 0);
    assertThat(handlerAttempts).containsExactly(1); // ApproximateReceiveCount never rose
    assertThat(outcomes.count("held-1", ProcessingOutcome.PROCESSED)).isEqualTo(1);
    assertThat(dlqHolder.deadLetters()).isEmpty();
  }

  private void sql(String statement) throws Exception {
    try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
