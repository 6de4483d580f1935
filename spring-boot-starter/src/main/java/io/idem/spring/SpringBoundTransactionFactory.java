package io.idem.spring;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Properties;
import javax.sql.DataSource;
import org.apache.ibatis.session.TransactionIsolationLevel;
import org.apache.ibatis.transaction.Transaction;
import org.apache.ibatis.transaction.TransactionFactory;
import org.apache.ibatis.transaction.jdbc.JdbcTransaction;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The MyBatis {@link TransactionFactory} of the store's own {@code SqlSessionFactory}: inside a
 * Spring transaction that holds a connection of the data source (the one {@link
 * SpringTransactionStore} opens through the application's transaction manager), a session works
 * on that bound connection and leaves commit, rollback and release to Spring; outside one (the
 * store's start-up checks, retention, {@code isProcessed}) it is MyBatis' {@link JdbcTransaction}
 * with auto-commit off, a transaction of its own, as store-jdbc requires.
 *
 * <p>Unlike mybatis-spring's {@code SpringManagedTransactionFactory} it never runs a session in
 * auto-commit mode outside a Spring transaction, so {@code MyBatisProcessedEventStore}'s start-up
 * checks pass on a pool with the default {@code autoCommit=true}. Thread-safe (stateless).
 */
final class SpringBoundTransactionFactory implements TransactionFactory {

  @Override
  public void setProperties(Properties props) {}

  @Override
  public Transaction newTransaction(Connection conn) {
    return new JdbcTransaction(conn);
  }

  @Override
  public Transaction newTransaction(
      DataSource dataSource, @Nullable TransactionIsolationLevel level, boolean autoCommit) {
    if (TransactionSynchronizationManager.isActualTransactionActive()
        && TransactionSynchronizationManager.getResource(dataSource) != null) {
      return new BoundTransaction(dataSource);
    }
    return new JdbcTransaction(dataSource, level, autoCommit);
  }

  /** The connection Spring bound to the current transaction; Spring commits and releases it. */
  private static final class BoundTransaction implements Transaction {
    private final DataSource dataSource;
    private @Nullable Connection connection;

    BoundTransaction(DataSource dataSource) {
      this.dataSource = dataSource;
    }

    @Override
    public Connection getConnection() {
      if (connection == null) {
        connection = DataSourceUtils.getConnection(dataSource);
      }
      return connection;
    }

    @Override
    public void commit() {
      // Spring's transaction manager commits when SpringTransactionStore's callback returns
    }

    @Override
    public void rollback() {
      // Spring's transaction manager rolls back when the callback throws
    }

    @Override
    public void close() {
      if (connection != null) {
        DataSourceUtils.releaseConnection(connection, dataSource);
        connection = null;
      }
    }

    @Override
    public @Nullable Integer getTimeout() throws SQLException {
      return null;
    }
  }
}
