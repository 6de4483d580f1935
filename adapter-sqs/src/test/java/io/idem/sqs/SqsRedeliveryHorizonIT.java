package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.fixtures.SqsFixture;
import io.idem.spi.RedeliveryHorizon.Horizon;
import io.idem.store.jdbc.RetentionJob;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/** {@link SqsRedeliveryHorizon} reads a real queue's retention, and a {@link RetentionJob} checks its window against it. */
class SqsRedeliveryHorizonIT {
  private final SqsClient client = SqsFixture.shared().newClient();
  private TestDatabase database;
  private String queueUrl;
  private String dlqUrl;

  @BeforeEach
  void setUp() {
    database = TestDatabase.create("sqs_horizon");
  }

  @AfterEach
  void tearDown() {
    if (queueUrl != null) {
      SqsFixture.shared().deleteQueue(client, queueUrl);
    }
    if (dlqUrl != null) {
      SqsFixture.shared().deleteQueue(client, dlqUrl);
    }
    database.close();
    client.close();
  }

  /**
   * Amazon SQS and LocalStack answer MessageRetentionPeriod; ElasticMQ (the in-process server
   * here without Docker) ignores the attribute and never expires a message: unbounded.
   */
  @Test
  void theQueuesRetentionPeriodIsItsHorizonAndAShorterWindowIsRefused() {
    long tenDays = Duration.ofDays(10).toSeconds();
    queueUrl = SqsFixture.shared().createQueue(client, "horizon-" + UUID.randomUUID().toString().substring(0, 8),
        Map.of(QueueAttributeName.MESSAGE_RETENTION_PERIOD, String.valueOf(tenDays)));
    SqsRedeliveryHorizon horizon = SqsRedeliveryHorizon.of(client, queueUrl);
    Horizon read = horizon.read();

    if (SqsFixture.shared().isElasticMq()) {
      assertThat(read.bound()).isNull();
      assertThat(read.basis()).contains("MessageRetentionPeriod=none, no RedrivePolicy");
      assertThatThrownBy(() -> RetentionJob.builder(database.store).redeliveryHorizon(horizon).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("sqs queue " + queueUrl + " is unbounded")
          .hasMessageContaining("acceptReplaysBeyondWindow(true)");
      assertThat(RetentionJob.builder(database.store).redeliveryHorizon(horizon).acceptReplaysBeyondWindow(true)
          .build().horizons()).containsExactly(read);
      return;
    }
    assertThat(read.bound()).isEqualTo(Duration.ofDays(10));
    assertThat(read.basis()).isEqualTo("MessageRetentionPeriod=" + tenDays + " s, no RedrivePolicy");
    assertThatThrownBy(() -> RetentionJob.builder(database.store).retention(Duration.ofDays(10))
            .redeliveryHorizon(horizon).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT240H is not longer than the redelivery horizon PT240H of sqs queue "
            + queueUrl)
        .hasMessageContaining("MessageRetentionPeriod=864000 s")
        .hasMessageContaining("retention(PT264H)");
    assertThat(RetentionJob.builder(database.store).redeliveryHorizon(horizon)
        .build().horizons()).containsExactly(read);
  }

  /**
   * With a RedrivePolicy the horizon covers one DLQ redrive (a standard queue's DLQ keeps the
   * original enqueue time: DLQ retention + source retention); the DLQ is found from the policy's
   * ARN. ElasticMQ expires nothing: unbounded, with the DLQ named in the basis.
   */
  @Test
  void aRedrivePolicysDeadLetterQueueIsInTheHorizon() {
    String run = UUID.randomUUID().toString().substring(0, 8);
    dlqUrl = SqsFixture.shared().createQueue(client, "horizon-dlq-" + run,
        Map.of(QueueAttributeName.MESSAGE_RETENTION_PERIOD, String.valueOf(Duration.ofDays(4).toSeconds())));
    String arn = client.getQueueAttributes(b -> b.queueUrl(dlqUrl).attributeNames(QueueAttributeName.QUEUE_ARN))
        .attributes().get(QueueAttributeName.QUEUE_ARN);
    queueUrl = SqsFixture.shared().createQueue(client, "horizon-" + run, Map.of(
        QueueAttributeName.MESSAGE_RETENTION_PERIOD, String.valueOf(Duration.ofDays(10).toSeconds()),
        QueueAttributeName.REDRIVE_POLICY, "{\"maxReceiveCount\":\"3\",\"deadLetterTargetArn\":\"" + arn + "\"}"));
    SqsRedeliveryHorizon horizon = SqsRedeliveryHorizon.of(client, queueUrl);
    Horizon read = horizon.read();
    assertThat(read.basis()).contains("dead-letter queue " + dlqUrl);

    if (SqsFixture.shared().isElasticMq()) {
      assertThat(read.bound()).isNull();
      assertThat(read.basis()).contains("MessageRetentionPeriod=none");
    } else {
      assertThat(read.bound()).isEqualTo(Duration.ofDays(14)); // 4-day DLQ + one redrive into the 10-day source
      assertThat(horizon.withoutRedrive().read().bound()).isEqualTo(Duration.ofDays(10));
    }
    assertThat(horizon.withoutRedrive().read().basis()).contains("redrive not counted")
        .doesNotContain("dead-letter queue");
  }

  @Test
  void aQueueThatDoesNotExistIsAClearStartUpError() {
    String missing = SqsFixture.shared().endpoint() + "/000000000000/no-such-queue-horizon";
    assertThatThrownBy(() -> RetentionJob.builder(database.store)
            .redeliveryHorizon(SqsRedeliveryHorizon.of(client, missing)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("could not be read")
        .hasMessageContaining("sqs queue " + missing);
  }
}
