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

  @BeforeEach
  void setUp() {
    database = TestDatabase.create("sqs_horizon");
  }

  @AfterEach
  void tearDown() {
    if (queueUrl != null) {
      SqsFixture.shared().deleteQueue(client, queueUrl);
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
      assertThat(read.basis()).contains("no MessageRetentionPeriod");
      assertThatThrownBy(() -> RetentionJob.builder(database.store).redeliveryHorizon(horizon).build())
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("sqs queue " + queueUrl + " is unbounded")
          .hasMessageContaining("acceptReplaysBeyondWindow(true)");
      assertThat(RetentionJob.builder(database.store).redeliveryHorizon(horizon).acceptReplaysBeyondWindow(true)
          .build().horizons()).containsExactly(read);
      return;
    }
    assertThat(read.bound()).isEqualTo(Duration.ofDays(10));
    assertThat(read.basis()).isEqualTo("MessageRetentionPeriod=" + tenDays + " s");
    assertThatThrownBy(() -> RetentionJob.builder(database.store).redeliveryHorizon(horizon).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("retention window PT168H is shorter than the redelivery horizon PT240H of sqs queue "
            + queueUrl)
        .hasMessageContaining("MessageRetentionPeriod=864000 s")
        .hasMessageContaining("retention(PT240H)");
    assertThat(RetentionJob.builder(database.store).retention(Duration.ofDays(14)).redeliveryHorizon(horizon)
        .build().horizons()).containsExactly(read);
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
