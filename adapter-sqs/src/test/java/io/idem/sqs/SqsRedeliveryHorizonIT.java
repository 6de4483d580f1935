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

  @Test
  void theQueuesRetentionPeriodIsItsHorizonAndAShorterWindowIsRefused() {
    long tenDays = Duration.ofDays(10).toSeconds();
    queueUrl = SqsFixture.shared().createQueue(client, "horizon-" + UUID.randomUUID().toString().substring(0, 8),
        Map.of(QueueAttributeName.MESSAGE_RETENTION_PERIOD, String.valueOf(tenDays)));
    SqsRedeliveryHorizon horizon = SqsRedeliveryHorizon.of(client, queueUrl);

    Horizon read = horizon.read();
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
  void theDefaultRetentionOfFourDaysFitsTheDefaultWindow() {
    queueUrl = SqsFixture.shared().createQueue(client, "horizon-" + UUID.randomUUID().toString().substring(0, 8),
        Map.of());
    SqsRedeliveryHorizon horizon = SqsRedeliveryHorizon.of(client, queueUrl);

    assertThat(horizon.read().bound()).isEqualTo(Duration.ofDays(4));
    assertThat(RetentionJob.builder(database.store).redeliveryHorizon(horizon).build().retention())
        .isEqualTo(RetentionJob.DEFAULT_RETENTION);
  }
}
