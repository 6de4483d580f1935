package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.MessageHandler;
import io.idem.ProcessingOutcome;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.UUID;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Connections that cannot be unwrapped to pgjdbc's {@code BaseConnection} (another driver, or a
 * wrapper that hides it): the store confirms each claim with a query instead of the driver's
 * transaction state, and still never acks a message whose handler swallowed an SQL error or
 * rolled the transaction back by SQL text.
 */
class OtherDriverFallbackIT {
  private static HikariDataSource pool;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void setUp() throws Exception {
    pool = StoreTests.pool(StoreTests.newSchema("other_driver"), "idem-other-driver", null, c -> {});
    StoreTests.execute(pool, "CREATE TABLE effects (k text PRIMARY KEY)", "INSERT INTO effects VALUES ('taken')");
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(new Opaque(pool)))
        .createTableIfMissing(true).build();
  }

  @AfterAll
  static void tearDown() {
    pool.close();
  }

  /** A data source whose connections answer {@code isWrapperFor} false and refuse {@code unwrap}. */
  private record Opaque(DataSource target) implements DataSource {
    @Override
    public Connection getConnection() throws SQLException {
      Connection real = target.getConnection();
      return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
          new Class<?>[] {Connection.class}, (proxy, method, args) -> {
            switch (method.getName()) {
              case "isWrapperFor" -> {
                return false;
              }
              case "unwrap" -> throw new SQLException("not a wrapper");
              default -> {
                try {
                  return method.invoke(real, args);
                } catch (InvocationTargetException e) {
                  throw e.getCause();
                }
              }
            }
          });
    }

    @Override
    public Connection getConnection(String user, String password) throws SQLException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }

  private static ProcessingOutcome run(String key, MessageHandler<SqlSession> handler, RecordedAcknowledgement ack) {
    return StoreTests.pipeline(store, handler, false).process(StoreTests.message(key, "{}", 1), ack);
  }

  private static boolean marker(String key) {
    return store.isProcessed(new IdempotencyKey("classify", key, KeySource.HEADER));
  }

  @Test
  void aMessageIsProcessedAndConfirmedByAQuery() {
    String key = "ok-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    assertThat(run(key, (m, session) -> StoreTests.execute(session, "INSERT INTO effects VALUES ('" + key + "')"), ack))
        .isEqualTo(ProcessingOutcome.PROCESSED);
    assertThat(ack.calls).containsExactly("ack");
    assertThat(marker(key)).isTrue();
  }

  @Test
  void aSwallowedSqlErrorIsAHandlerFailure() {
    String key = "swallowed-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    assertThat(run(key, (m, session) -> {
      try {
        StoreTests.execute(session, "SELECT 'not a number'::int");
      } catch (SQLException swallowed) {
        // a handler bug (pgjdbc chains the swallowed error to the confirming query's 25P02, so a
        // swallowed integrity violation would be dead-lettered as non-retryable: not this test's)
      }
    }, ack)).isEqualTo(ProcessingOutcome.RETRY);
    assertThat(ack.calls).containsExactly("retry");
    assertThat(marker(key)).isFalse();
  }

  @Test
  void aSqlTextRollbackIsAHandlerFailure() {
    String key = "rolled-back-" + UUID.randomUUID();
    RecordedAcknowledgement ack = new RecordedAcknowledgement();
    assertThat(run(key, (m, session) -> StoreTests.execute(session, "ROLLBACK"), ack))
        .isEqualTo(ProcessingOutcome.RETRY);
    assertThat(ack.calls).containsExactly("retry");
    assertThat(marker(key)).isFalse();
  }

  /**
   * On connections that do not unwrap to pgjdbc the claim is confirmed by re-reading the marker,
   * which a naturally idempotent pipeline does not write: refused when it is built.
   */
  @Test
  void aNaturallyIdempotentPipelineIsRefusedWhenItIsBuilt() {
    assertThat(store.confirmsWithoutMarkers()).isFalse();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> io.idem.IdempotentConsumer.builder(store)
            .consumerGroup("natural").naturallyIdempotent(true).handler((message, tx) -> { }).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("naturallyIdempotent(true)");
  }

}
