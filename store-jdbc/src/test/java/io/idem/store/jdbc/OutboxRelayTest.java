package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.spi.OutboxPublisher;
import java.time.Duration;
import java.util.Map;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.ibatis.datasource.unpooled.UnpooledDataSource;
import org.junit.jupiter.api.Test;

class OutboxRelayTest {
  private static final OutboxPublisher NOTHING = message -> {};
  private static final SqlSessionFactory SESSIONS = new SqlSessionFactoryBuilder().build(
      new Configuration(new Environment("t", new JdbcTransactionFactory(), new UnpooledDataSource())));

  @Test
  void settingsOutOfRangeAreRefusedNamingSettingAndValue() {
    assertThatThrownBy(() -> OutboxRelay.builder(SESSIONS, NOTHING).batchSize(0).build())
        .hasMessage("batchSize must be >= 1, but was 0");
    assertThatThrownBy(() -> OutboxRelay.builder(SESSIONS, NOTHING).pollInterval(Duration.ZERO).build())
        .hasMessage("pollInterval must be positive, but was PT0S");
    assertThatThrownBy(() -> OutboxRelay.builder(SESSIONS, NOTHING).statsInterval(Duration.ofSeconds(-1)).build())
        .hasMessage("statsInterval must be positive, but was PT-1S");
    assertThatThrownBy(() -> OutboxRelay.builder(SESSIONS, NOTHING).tableName("x;drop").build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tableName");
  }

  @Test
  void anEntryIsValidated() {
    assertThatThrownBy(() -> new OutboxEntry("k", "", null, new byte[0], Map.of()))
        .hasMessageStartingWith("destination must be 1 to 255 characters");
    assertThatThrownBy(() -> new OutboxEntry("k", "d", null, new byte[0], Map.of("Idempotency-Key", "x")))
        .hasMessageContaining("headers must not hold 'Idempotency-Key'");
    assertThatThrownBy(() -> new OutboxEntry(" ", "d", null, new byte[0], Map.of()))
        .hasMessageContaining("idempotency key must not be blank");
  }

  @Test
  void theScriptIsRenamedForAnotherTable() {
    String sql = Outbox.script(TableName.of("billing.idem_outbox_2"));
    assertThat(sql).contains("CREATE TABLE IF NOT EXISTS billing.idem_outbox_2 (")
        .contains("idem_outbox_2_due_idx\n    ON billing.idem_outbox_2 (")
        .contains("idem_outbox_2_ordering_idx\n    ON billing.idem_outbox_2 (")
        .doesNotContain("idem_outbox_2_2");
  }

  /**
   * The batch size follows whether the publisher sends batches: its own publishAll → 500; the
   * interface's default, or a JDK proxy (whose target is not known: an aspect's) → 100.
   */
  @Test
  void theDefaultBatchSizeFollowsWhetherThePublisherSendsBatches() {
    OutboxPublisher batching = new OutboxPublisher() {
      @Override
      public void publish(io.idem.spi.OutboxMessage message) {}

      @Override
      public java.util.List<io.idem.spi.OutboxPublishResult> publishAll(java.util.List<io.idem.spi.OutboxMessage> messages)
          throws Exception {
        return OutboxPublisher.super.publishAll(messages);
      }
    };
    OutboxPublisher proxy = (OutboxPublisher) java.lang.reflect.Proxy.newProxyInstance(
        OutboxPublisher.class.getClassLoader(), new Class<?>[] {OutboxPublisher.class},
        (p, method, args) -> method.invoke(batching, args));
    assertThat(OutboxRelay.builder(SESSIONS, batching).build().batchSize())
        .isEqualTo(OutboxRelay.DEFAULT_PUBLISH_ALL_BATCH_SIZE);
    assertThat(OutboxRelay.builder(SESSIONS, NOTHING).build().batchSize()).isEqualTo(OutboxRelay.DEFAULT_BATCH_SIZE);
    assertThat(OutboxRelay.builder(SESSIONS, proxy).build().batchSize()).isEqualTo(OutboxRelay.DEFAULT_BATCH_SIZE);
    assertThat(OutboxRelay.builder(SESSIONS, proxy).batchSize(7).build().batchSize()).isEqualTo(7);
  }

}
