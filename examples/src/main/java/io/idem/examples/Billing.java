package io.idem.examples;

import io.idem.IdempotentConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import javax.sql.DataSource;
import org.apache.ibatis.datasource.pooled.PooledDataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;

/**
 * The part of every quick start that does not depend on the broker: the MyBatis
 * {@link SqlSessionFactory} and the idempotent pipeline, whose handler charges each order once.
 */
public final class Billing {
  private Billing() {}

  /** A small pool for {@code jdbcUrl}; use your own pool (HikariCP…) in an application. */
  public static DataSource dataSource(String jdbcUrl, String user, String password) {
    return new PooledDataSource("org.postgresql.Driver", jdbcUrl, user, password);
  }

  /**
   * The application's MyBatis set-up. It must use {@link JdbcTransactionFactory} so that Idem
   * owns each transaction (docs/STORE.md says why).
   */
  public static SqlSessionFactory sqlSessionFactory(DataSource dataSource) {
    Configuration configuration =
        new Configuration(new Environment("app", new JdbcTransactionFactory(), dataSource));
    configuration.addMapper(Payments.class);
    SqlSessionFactory sqlSessionFactory = new SqlSessionFactoryBuilder().build(configuration);
    try (SqlSession session = sqlSessionFactory.openSession(true)) {
      session.getMapper(Payments.class).createTableIfMissing();
    }
    return sqlSessionFactory;
  }

  /**
   * The pipeline: the processed-events marker and the handler's write commit in one PostgreSQL
   * transaction, and the broker is acknowledged only after it committed.
   */
  public static IdempotentConsumer<SqlSession> pipeline(SqlSessionFactory sqlSessionFactory) {
    var store = MyBatisProcessedEventStore.builder(sqlSessionFactory).createTableIfMissing(true).build();
    return IdempotentConsumer.builder(store)
        .consumerGroup("billing")
        // key: the idempotency key the store claimed (from the "idempotency-key" header by default)
        .handler((key, message, session) -> session.getMapper(Payments.class).charge(key.value()))
        .build();
  }
}
