package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RabbitConsumerConfigTest {

  @Test
  void defaults() {
    RabbitConsumerConfig config = RabbitConsumerConfig.builder("orders").build();
    assertThat(config.uri()).isEqualTo(RabbitConsumerConfig.DEFAULT_URI);
    // batch mode by default, with room for two batches in the prefetch window
    assertThat(config.maxBatchSize()).isEqualTo(RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE).isEqualTo(10);
    assertThat(config.prefetch()).isEqualTo(2 * RabbitConsumerConfig.DEFAULT_MAX_BATCH_SIZE).isEqualTo(20);
    assertThat(config.concurrency()).isEqualTo(1);
    assertThat(RabbitConsumerConfig.builder("orders").maxBatchSize(1).build().maxBatchSize()).isEqualTo(1);
    assertThat(config.queueType()).isEqualTo(RabbitQueueType.CLASSIC);
    assertThat(config.deadLetterExchange()).isEqualTo("orders.dlx");
    assertThat(config.deadLetterQueue()).isEqualTo("orders.dlq");
    assertThat(config.deadLetterRoutingKey()).isNull();
    assertThat(config.deliveryLimit()).isNull();
    assertThat(config.declareTopology()).isFalse();
    assertThat(config.verifyQueueArguments()).isTrue();
    assertThat(config.connectionName()).isEqualTo("idem-rabbitmq:orders");
    assertThat(config.shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.recoveryInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(config.confirmTimeout()).isEqualTo(Duration.ofSeconds(10));
    assertThat(config.consumerTimeout()).isEqualTo(Duration.ofMinutes(30));
    assertThat(config.maxHold()).isEqualTo(Duration.ofMinutes(25));
    assertThat(config.queueArguments())
        .containsExactly(
            org.assertj.core.api.Assertions.entry("x-queue-type", "classic"),
            org.assertj.core.api.Assertions.entry("x-dead-letter-exchange", "orders.dlx"));
  }

  @Test
  void anUnsetPrefetchIsTenOrTwiceTheBatchSize() {
    assertThat(RabbitConsumerConfig.DEFAULT_PREFETCH).isEqualTo(10);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(1).build().prefetch()).as("per message").isEqualTo(10);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(5).build().prefetch()).isEqualTo(10);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(6).build().prefetch()).isEqualTo(12);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(50).build().prefetch()).isEqualTo(100);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(32_767).build().prefetch()).isEqualTo(65_534);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(40_000).build().prefetch())
        .as("capped at AMQP's largest prefetch count").isEqualTo(65_535);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(Integer.MAX_VALUE).build().prefetch()).isEqualTo(65_535);
    // derived at build(), from the batch size set last
    assertThat(RabbitConsumerConfig.builder("q").concurrency(2).maxBatchSize(25).build().prefetch()).isEqualTo(50);
    assertThat(RabbitConsumerConfig.defaultPrefetch(1)).isEqualTo(10);
    assertThat(RabbitConsumerConfig.defaultPrefetch(10)).isEqualTo(20);
    assertThatThrownBy(() -> RabbitConsumerConfig.defaultPrefetch(0))
        .hasMessage("maxBatchSize must be >= 1, but was 0");
  }

  @Test
  void anExplicitPrefetchIsKeptAsGiven() {
    assertThat(RabbitConsumerConfig.builder("q").prefetch(10).build().prefetch()).as("the old default").isEqualTo(10);
    assertThat(RabbitConsumerConfig.builder("q").prefetch(3).build())
        .as("below maxBatchSize: allowed (batches of at most 3; start() warns)")
        .extracting(RabbitConsumerConfig::prefetch, RabbitConsumerConfig::maxBatchSize).containsExactly(3, 10);
    assertThat(RabbitConsumerConfig.builder("q").prefetch(500).maxBatchSize(1).build().prefetch()).isEqualTo(500);
    assertThat(RabbitConsumerConfig.builder("q").maxBatchSize(100).prefetch(150).build().prefetch()).isEqualTo(150);
    assertThat(RabbitConsumerConfig.builder("q").build().toString()).contains(", prefetch=20 (default), ");
    assertThat(RabbitConsumerConfig.builder("q").prefetch(20).build().toString()).contains(", prefetch=20, ");
  }

  @Test
  void concurrencyIsCheckedAgainstTheEffectivePrefetch() {
    assertThat(RabbitConsumerConfig.builder("q").concurrency(20).build().concurrency()).isEqualTo(20);
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").concurrency(21).build())
        .hasMessage("concurrency must be in 1..prefetch (20, the default for maxBatchSize 10; set prefetch(int)),"
            + " but was 21");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").maxBatchSize(1).concurrency(11).build())
        .hasMessage("concurrency must be in 1..prefetch (10, the default for maxBatchSize 1; set prefetch(int)),"
            + " but was 11");
  }

  @Test
  void quorumArgumentsIncludeTheDeliveryLimitAndExtras() {
    RabbitConsumerConfig config = RabbitConsumerConfig.builder("orders")
        .queueType(RabbitQueueType.QUORUM)
        .deliveryLimit(20)
        .deadLetterExchange("shared.dlx")
        .deadLetterRoutingKey("orders.dead")
        .queueArgument("x-max-length", 1000)
        .build();
    assertThat(config.queueArguments())
        .containsEntry("x-queue-type", "quorum")
        .containsEntry("x-delivery-limit", 20)
        .containsEntry("x-dead-letter-exchange", "shared.dlx")
        .containsEntry("x-dead-letter-routing-key", "orders.dead")
        .containsEntry("x-max-length", 1000);
  }

  @Test
  void validationNamesTheSettingAndTheValue() {
    assertThatThrownBy(() -> RabbitConsumerConfig.builder(" ").build())
        .hasMessage("queue must be non-blank and at most 255 UTF-8 bytes, but was ' '");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").maxBatchSize(0).build())
        .hasMessage("maxBatchSize must be >= 1, but was 0");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").prefetch(0).build())
        .hasMessage("prefetch must be in 1..65535, but was 0");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").prefetch(65_536).build())
        .hasMessage("prefetch must be in 1..65535, but was 65536");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").prefetch(4).concurrency(5).build())
        .hasMessage("concurrency must be in 1..prefetch (4), but was 5");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").deliveryLimit(5).build())
        .hasMessage("deliveryLimit applies to quorum queues only, but was 5 on a CLASSIC queue"
            + " (the default queue type is CLASSIC); set queueType(RabbitQueueType.QUORUM) as well");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").queueType(RabbitQueueType.QUORUM)
            .deliveryLimit(0).build())
        .hasMessage("deliveryLimit must be >= 1, but was 0");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").queueArgument("x-delivery-limit", 3).build())
        .hasMessage("queueArgument 'x-delivery-limit' has its own setting, but was given as 3");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").shutdownTimeout(Duration.ZERO).build())
        .hasMessage("shutdownTimeout must be positive, but was PT0S");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").uri("http://x").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("uri must be an AMQP URI, but was 'http://x'");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q".repeat(256)).build())
        .hasMessageStartingWith("queue must be non-blank and at most 255 UTF-8 bytes");
  }

  @Test
  void deadLetterQueueMustNotBeTheConsumedQueue() {
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("orders").deadLetterQueue("orders").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("deadLetterQueue must differ from queue, but both were 'orders': dead letters would be"
            + " consumed again and loop for ever");
    assertThat(RabbitConsumerConfig.builder("orders").deadLetterQueue("orders.failed").build().deadLetterQueue())
        .isEqualTo("orders.failed");
  }

  @Test
  void toStringHidesThePassword() {
    String text = RabbitConsumerConfig.builder("q").uri("amqp://user:secret@host:5672/%2F").build().toString();
    assertThat(text).contains("amqp://user:***@host").doesNotContain("secret");
  }

  @Test
  void maxHoldMustEndBeforeTheBrokersConsumerTimeout() {
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").maxHold(Duration.ofMinutes(30)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxHold must be below consumerTimeout (PT30M");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").maxHold(Duration.ZERO).build())
        .hasMessageContaining("maxHold must be positive");
    assertThatThrownBy(() -> RabbitConsumerConfig.builder("q").queueArgument("x-consumer-timeout", 60_000)
        .maxHold(Duration.ofMinutes(1)).build())
        .hasMessageContaining("below the queue's x-consumer-timeout (60000 ms)");
    assertThat(RabbitConsumerConfig.builder("q").consumerTimeout(Duration.ofHours(2))
        .maxHold(Duration.ofHours(1)).build().maxHold()).isEqualTo(Duration.ofHours(1));
  }
}
