package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class SqsConsumerConfigTest {
  private static final String URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo";

  @Test
  void defaults() {
    SqsConsumerConfig config = SqsConsumerConfig.builder(URL).build();
    assertThat(config.queueUrl()).isEqualTo(URL);
    assertThat(config.queueName()).isEqualTo("orders.fifo");
    assertThat(config.waitTime()).isEqualTo(SqsConsumerConfig.DEFAULT_WAIT_TIME).isEqualTo(Duration.ofSeconds(20));
    assertThat(config.maxMessages()).isEqualTo(SqsConsumerConfig.DEFAULT_MAX_MESSAGES).isEqualTo(10);
    assertThat(config.visibilityTimeout()).isEqualTo(SqsConsumerConfig.DEFAULT_VISIBILITY_TIMEOUT);
    assertThat(config.visibilityHeartbeat()).isTrue();
    assertThat(config.heartbeatShare()).isEqualTo(0.5);
    assertThat(config.concurrency()).isEqualTo(1);
    // batch mode by default: one receive of up to 10, one COMMIT, one DeleteMessageBatch
    assertThat(config.maxBatchSize()).isEqualTo(SqsConsumerConfig.DEFAULT_MAX_BATCH_SIZE).isEqualTo(10)
        .isEqualTo(config.maxMessages());
    assertThat(config.deleteBatchWindow()).isEqualTo(Duration.ofMillis(100));
    assertThat(config.deadLetterQueueUrl()).isNull();
    assertThat(config.shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.endpoint()).isNull();
    assertThat(config.region()).isNull();
    assertThat(config.credentials()).isNull();
  }

  @Test
  void validationNamesTheSettingAndTheValue() {
    rejects(b -> b.waitTime(Duration.ofSeconds(21)), "waitTime must be whole seconds between 0 s and 20 s, but was PT21S");
    rejects(b -> b.waitTime(Duration.ofMillis(500)), "waitTime must be whole seconds between 0 s and 20 s, but was PT0.5S");
    rejects(b -> b.maxMessages(0), "maxMessages must be in 1..10, but was 0");
    rejects(b -> b.maxMessages(11), "maxMessages must be in 1..10, but was 11");
    rejects(b -> b.visibilityTimeout(Duration.ZERO), "visibilityTimeout must be whole seconds between 1 s and 43200 s, but was PT0S");
    rejects(b -> b.visibilityTimeout(Duration.ofHours(13)), "visibilityTimeout must be whole seconds between 1 s and 43200 s, but was PT13H");
    rejects(b -> b.heartbeatShare(1.0), "heartbeatShare must be in (0, 1), but was 1.0");
    rejects(b -> b.concurrency(0), "concurrency must be >= 1, but was 0");
    rejects(b -> b.maxBatchSize(0), "maxBatchSize must be >= 1, but was 0");
    rejects(b -> b.deleteBatchWindow(Duration.ofSeconds(30)),
        "deleteBatchWindow must be >= 0 and shorter than visibilityTimeout (PT30S), but was PT30S");
    rejects(b -> b.deadLetterQueueUrl(URL), "deadLetterQueueUrl must differ from queueUrl, but was " + URL);
    rejects(b -> b.shutdownTimeout(Duration.ZERO), "shutdownTimeout must be positive, but was PT0S");
    rejects(b -> b.pollErrorBackoff(Duration.ofSeconds(-1)), "pollErrorBackoff must not be negative, but was PT-1S");
    rejects(b -> b.region(" "), "region must not be blank, but was ' '");
  }

  @Test
  void refusesAWaitTimeThatLeavesNoVisibilityMargin() {
    // issue 11: a 1 s visibility timeout with a 1 s long poll left every message "too close to
    // expiry" on arrival; it was skipped unprocessed and SQS counted each receive
    rejects(b -> b.visibilityTimeout(Duration.ofSeconds(1)).waitTime(Duration.ofSeconds(1)),
        "waitTime (1 s) must be shorter than visibilityTimeout (1 s) minus the safety margin (250 ms):"
            + " messages returned at the end of a long poll would already look too close to their"
            + " visibility running out and be skipped unprocessed, each skip counted by SQS as a"
            + " receive; lower waitTime or raise visibilityTimeout");
    rejects(b -> b.visibilityTimeout(Duration.ofSeconds(20)).waitTime(Duration.ofSeconds(19)),
        "waitTime (19 s) must be shorter than visibilityTimeout (20 s) minus the safety margin (1000 ms):"
            + " messages returned at the end of a long poll would already look too close to their"
            + " visibility running out and be skipped unprocessed, each skip counted by SQS as a"
            + " receive; lower waitTime or raise visibilityTimeout");
    assertThat(SqsConsumerConfig.builder(URL).visibilityTimeout(Duration.ofSeconds(2))
        .waitTime(Duration.ofSeconds(1)).build().waitTime()).hasSeconds(1);
    assertThat(SqsConsumerConfig.builder(URL).visibilityTimeout(Duration.ofSeconds(20))
        .waitTime(Duration.ofSeconds(18)).build().waitTime()).hasSeconds(18);
  }

  @Test
  void rejectsSomethingThatIsNotAQueueUrl() {
    assertThatThrownBy(() -> SqsConsumerConfig.builder("orders").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("queue URL must look like");
  }

  @Test
  void zeroWindowMeansSynchronousDeletes() {
    assertThat(SqsConsumerConfig.builder(URL).deleteBatchWindow(Duration.ZERO).build().deleteBatchWindow()).isZero();
  }

  private static void rejects(UnaryOperator<SqsConsumerConfig.Builder> setting, String message) {
    assertThatThrownBy(() -> setting.apply(SqsConsumerConfig.builder(URL)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(message);
  }
}
