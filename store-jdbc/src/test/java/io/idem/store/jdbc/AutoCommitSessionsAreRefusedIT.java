package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.KeySource;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.fixtures.PostgresFixture;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.apache.ibatis.transaction.Transaction;
import org.apache.ibatis.transaction.TransactionFactory;
import org.apache.ibatis.transaction.jdbc.JdbcTransaction;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.ibatis.transaction.managed.ManagedTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Regression: on a session in auto-commit mode (MyBatis' ManagedTransactionFactory over a pool
 * with autoCommit=true, or mybatis-spring outside a Spring transaction) the claim committed on its
 * own, a failed handler rolled back nothing, and the redelivery was skipped as a duplicate: the
 * effect was never applied. And with a pool in autoCommit=false, ManagedTransactionFactory ignores
 * the store's commit, so the pool rolled everything back after the ack.
 */
class AutoCommitSessionsAreRefusedIT {
  private static HikariDataSource autoCommitPool;

  @BeforeAll
  static void setUp() throws Exception {
    autoCommitPool = PostgresFixture.shared().newSchema("auto_commit"); // Hikari's default: on
    try (Connection c = autoCommitPool.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE effects (k text PRIMARY KEY)");
    }
    ProcessedEventsSchema.apply(autoCommitPool, MyBatisProcessedEventStore.DEFAULT_TABLE);
  }

  @AfterAll
  static void tearDown() {
    autoCommitPool.close();
  }

  /** A pool of PostgreSQL connections in {@code schema}, in the given auto-commit mode. */
  static HikariDataSource pool(String schema, boolean autoCommit) {
    PostgresFixture postgres = PostgresFixture.shared();
    HikariConfig config = new HikariConfig();
    // the schema as a connection parameter: Hikari's setSchema would leave a transaction open on
    // an autoCommit=false connection, and every session would fail to set its isolation level
    String url = postgres.jdbcUrl();
    config.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema);
    config.setUsername(postgres.user());
    if (!postgres.password().isEmpty()) {
      config.setPassword(postgres.password());
    }
    config.setAutoCommit(autoCommit);
    config.setMaximumPoolSize(4);
    config.setMinimumIdle(0);
    return new HikariDataSource(config);
  }

  static SqlSessionFactory sessions(TransactionFactory transactions, DataSource ds) {
    return new SqlSessionFactoryBuilder().build(new Configuration(new Environment("it", transactions, ds)));
  }

  @Test
  void managedTransactionsOverAnAutoCommitPoolAreRefusedAtBuild() {
    SqlSessionFactory managed = sessions(new ManagedTransactionFactory(), autoCommitPool);
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(managed).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("auto-commit mode")
        .hasMessageContaining("would be skipped as a duplicate")
        .hasMessageContaining("JdbcTransactionFactory")
        .hasMessageContaining("autoCommit=false");
  }

  /** Like ManagedTransactionFactory under another name: hands out sessions whose commit does nothing. */
  private static final class CommitIgnoringFactory extends JdbcTransactionFactory {
    @Override
    public Transaction newTransaction(DataSource ds, TransactionIsolationLevel level, boolean autoCommit) {
      return new JdbcTransaction(ds, level, autoCommit) {
        @Override
        public void commit() {}

        @Override
        public void rollback() {}
      };
    }
  }

  @Test
  void aFactoryWhoseCommitDoesNothingIsRefusedAtBuild() {
    SqlSessionFactory ignoring = sessions(new CommitIgnoringFactory(), autoCommitPool);
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(ignoring).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("does not end its transaction")
        .hasMessageContaining("JdbcTransactionFactory");
  }

  @Test
  void aFactoryWhoseSessionsAreInAutoCommitModeIsRefusedAtBuild() {
    TurningFactory transactions = new TurningFactory();
    transactions.autoCommit.set(true);
    assertThatThrownBy(() -> MyBatisProcessedEventStore.builder(sessions(transactions, autoCommitPool)).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("auto-commit mode")
        .hasMessageContaining("would be skipped as a duplicate")
        .hasMessageContaining("JdbcTransactionFactory");
  }

  @Test
  void jdbcTransactionsOverAnAutoCommitPoolPass() {
    SqlSessionFactory jdbc = sessions(new JdbcTransactionFactory(), autoCommitPool);
    assertThat(MyBatisProcessedEventStore.builder(jdbc).build()).isNotNull();
    assertThat(MyBatisProcessedEventStore.builder(jdbc).isolation(null).build()).isNotNull();
  }

  /** Hands out auto-commit sessions once {@code autoCommit} is set: passes build, fails later. */
  private static final class TurningFactory extends JdbcTransactionFactory {
    final AtomicBoolean autoCommit = new AtomicBoolean();

    @Override
    public Transaction newTransaction(DataSource ds, TransactionIsolationLevel level, boolean autoCommitAsked) {
      return super.newTransaction(ds, level, autoCommitAsked || autoCommit.get());
    }
  }

  @Test
  void anAutoCommitSessionAfterBuildIsNeverAckedAndTheEffectIsNotLost() throws Exception {
    TurningFactory transactions = new TurningFactory();
    MyBatisProcessedEventStore store =
        MyBatisProcessedEventStore.builder(sessions(transactions, autoCommitPool)).build();
    AtomicInteger calls = new AtomicInteger();
    IdempotentConsumer<SqlSession> pipeline = IdempotentConsumer.builder(store)
        .consumerGroup("auto-commit")
        .handler((message, session) -> {
          if (calls.incrementAndGet() == 1) {
            throw new IllegalStateException("downstream timeout, before any write");
          }
          try (PreparedStatement ps = session.getConnection().prepareStatement("INSERT INTO effects VALUES (?)")) {
            ps.setString(1, message.header("idempotency-key"));
            ps.executeUpdate();
          }
        })
        .retryPolicy(RetryPolicy.builder().maxAttempts(5).initialBackoff(Duration.ofMillis(10))
            .maxBackoff(Duration.ofMillis(10)).build())
        .build();

    transactions.autoCommit.set(true);
    for (int attempt = 1; attempt <= 3; attempt++) {
      RecordedAcknowledgement ack = new RecordedAcknowledgement();
      assertThat(pipeline.process(message(attempt), ack)).as("attempt %d", attempt).isEqualTo(ProcessingOutcome.RETRY_STORE_UNAVAILABLE);
      assertThat(ack.calls).as("attempt %d", attempt).containsExactly("retryWhenStoreAvailable");
    }
    assertThat(calls).as("the handler never ran on an auto-commit session").hasValue(0);
    assertThat(store.isProcessed(new IdempotencyKey("auto-commit", "k-1", KeySource.HEADER))).isFalse();

    transactions.autoCommit.set(false); // configuration fixed: the message is applied once
    RecordedAcknowledgement failed = new RecordedAcknowledgement();
    assertThat(pipeline.process(message(4), failed)).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(failed.calls).containsExactly("retry");
    RecordedAcknowledgement applied = new RecordedAcknowledgement();
    assertThat(pipeline.process(message(5), applied)).isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(applied.calls).containsExactly("ack");
    assertThat(HandlerCannotEndTheTransactionIT.effects(autoCommitPool, "k-1")).isEqualTo(1);
  }

  private static InboundMessage message(int attempt) {
    return InboundMessage.builder("orders", "{}".getBytes(StandardCharsets.UTF_8))
        .header("idempotency-key", "k-1").deliveryAttempt(attempt).build();
  }
}
