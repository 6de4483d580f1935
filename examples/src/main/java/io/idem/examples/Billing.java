package io.idem.examples;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.util.concurrent.CountDownLatch;
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
 * {@link SqlSessionFactory} and the idempotent pipeline, whose handler charges each order once;
 * and, for the quick starts' {@code main} methods, their arguments and running until Ctrl-C.
 */
public final class Billing {
  static final String DEFAULT_JDBC_URL = "jdbc:postgresql://localhost:5432/postgres";

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

  /** The database from {@code args[first..first+2]} (JDBC URL, user, password), with defaults. */
  static DataSource dataSource(String[] args, int first) {
    return dataSource(arg(args, first, DEFAULT_JDBC_URL), arg(args, first + 1, "postgres"), arg(args, first + 2, ""));
  }

  static String arg(String[] args, int index, String fallback) {
    return args.length > index ? args[index] : fallback;
  }

  /** Blocks until the JVM is asked to stop, then closes the consumer (finishing in-flight work). */
  static void runUntilShutdown(BrokerConsumer consumer) throws InterruptedException {
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      consumer.close();
      closed.countDown();
    }, "quick-start-shutdown"));
    closed.await();
  }
}
