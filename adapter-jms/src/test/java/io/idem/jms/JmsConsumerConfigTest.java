package io.idem.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSContext;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class JmsConsumerConfigTest {
  // build() never connects: a factory that refuses to is enough here
  private static final ConnectionFactory FACTORY = new ConnectionFactory() {
    @Override public jakarta.jms.Connection createConnection() { throw new UnsupportedOperationException(); }
    @Override public jakarta.jms.Connection createConnection(String u, String p) { throw new UnsupportedOperationException(); }
    @Override public JMSContext createContext() { throw new UnsupportedOperationException(); }
    @Override public JMSContext createContext(String u, String p) { throw new UnsupportedOperationException(); }
    @Override public JMSContext createContext(String u, String p, int m) { throw new UnsupportedOperationException(); }
    @Override public JMSContext createContext(int m) { throw new UnsupportedOperationException(); }
  };

  private static JmsConsumerConfig.Builder builder() {
    return JmsConsumerConfig.builder(FACTORY, "orders", "orders.dlq");
  }

  @Test
  void defaults() {
    JmsConsumerConfig config = builder().build();
    assertThat(config.queue()).isEqualTo("orders");
    assertThat(config.deadLetterQueue()).isEqualTo("orders.dlq");
    assertThat(config.connectionFactory()).isSameAs(FACTORY);
    assertThat(config.concurrency()).isEqualTo(JmsConsumerConfig.DEFAULT_CONCURRENCY).isEqualTo(1);
    // batch mode by default: one claim, one COMMIT, one session commit per batch of up to 10
    assertThat(config.maxBatchSize()).isEqualTo(JmsConsumerConfig.DEFAULT_MAX_BATCH_SIZE).isEqualTo(10);
    assertThat(config.sessionMode()).isEqualTo(JmsSessionMode.TRANSACTED);
    assertThat(config.receiveTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(config.shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.reconnectBackoff()).isEqualTo(Duration.ofSeconds(1));
    assertThat(config.verifyDeadLetterQueue()).isTrue();
    assertThat(config.holdForRetryBackoff()).isTrue();
    assertThat(config.messageSelector()).isNull();
    assertThat(config.brokerMaxDeliveryAttempts()).isNull();
    assertThat(config.brokerDeadLetterQueue()).isNull();
  }

  @Test
  void theBatchDefaultAppliesToBothSessionModes() {
    // a session-wide acknowledge() settles a batch as one commit does: no mode refuses the default
    for (JmsSessionMode mode : JmsSessionMode.values()) {
      assertThat(builder().sessionMode(mode).build().maxBatchSize()).as("%s", mode)
          .isEqualTo(JmsConsumerConfig.DEFAULT_MAX_BATCH_SIZE);
    }
  }

  @Test
  void settingsAreCopied() {
    JmsConsumerConfig config = builder().concurrency(4).maxBatchSize(1).sessionMode(JmsSessionMode.CLIENT_ACKNOWLEDGE)
        .receiveTimeout(Duration.ofMillis(250)).shutdownTimeout(Duration.ZERO)
        .reconnectBackoff(Duration.ofSeconds(5)).verifyDeadLetterQueue(false).holdForRetryBackoff(false)
        .messageSelector("region = 'eu'").brokerMaxDeliveryAttempts(7).brokerDeadLetterQueue("DLQ").build();
    assertThat(config.concurrency()).isEqualTo(4);
    assertThat(config.maxBatchSize()).isEqualTo(1);
    assertThat(config.sessionMode()).isEqualTo(JmsSessionMode.CLIENT_ACKNOWLEDGE);
    assertThat(config.receiveTimeout()).isEqualTo(Duration.ofMillis(250));
    assertThat(config.shutdownTimeout()).isZero();
    assertThat(config.reconnectBackoff()).isEqualTo(Duration.ofSeconds(5));
    assertThat(config.verifyDeadLetterQueue()).isFalse();
    assertThat(config.holdForRetryBackoff()).isFalse();
    assertThat(config.messageSelector()).isEqualTo("region = 'eu'");
    assertThat(config.brokerMaxDeliveryAttempts()).isEqualTo(7);
    assertThat(config.brokerDeadLetterQueue()).isEqualTo("DLQ");
    assertThat(config.toString()).contains("orders.dlq", "CLIENT_ACKNOWLEDGE", "concurrency=4");
  }

  @Test
  void validationNamesSettingAndValue() {
    assertThatThrownBy(() -> builder().brokerMaxDeliveryAttempts(0).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("brokerMaxDeliveryAttempts must be >= 1 or BROKER_UNLIMITED (-1), but was 0");
    assertThat(builder().brokerMaxDeliveryAttempts(JmsConsumerConfig.BROKER_UNLIMITED).build()
        .brokerMaxDeliveryAttempts()).isEqualTo(-1);
    assertThatThrownBy(() -> builder().maxBatchSize(0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessage("maxBatchSize must be >= 1, but was 0");
    assertThatThrownBy(() -> builder().concurrency(0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessage("concurrency must be >= 1, but was 0");
    assertThatThrownBy(() -> builder().receiveTimeout(Duration.ZERO).build())
        .hasMessage("receiveTimeout must be >= 1 ms, but was PT0S");
    assertThatThrownBy(() -> builder().shutdownTimeout(Duration.ofSeconds(-1)).build())
        .hasMessage("shutdownTimeout must not be negative, but was PT-1S");
    assertThatThrownBy(() -> builder().reconnectBackoff(Duration.ofSeconds(-1)).build())
        .hasMessage("reconnectBackoff must be positive, but was PT-1S");
    assertThatThrownBy(() -> builder().reconnectBackoff(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("reconnectBackoff must be positive, but was PT0S");
    assertThatThrownBy(() -> JmsConsumerConfig.builder(FACTORY, " ", "d").build())
        .hasMessage("queue must not be blank, but was ' '");
    assertThatThrownBy(() -> JmsConsumerConfig.builder(FACTORY, "q", "").build())
        .hasMessage("deadLetterQueue must not be blank, but was ''");
    assertThatThrownBy(() -> JmsConsumerConfig.builder(FACTORY, "q", "q").build())
        .hasMessage("deadLetterQueue must differ from queue, but both were 'q'");
  }
}
