package io.idem.store.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.testkit.ProcessedEventStoreCompatibilityKit;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.datasource.unpooled.UnpooledDataSource;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store compatibility kit on the real PostgreSQL. */
class MyBatisProcessedEventStoreIT extends ProcessedEventStoreCompatibilityKit<SqlSession> {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void startStore() throws Exception {
    dataSource = PostgresFixture.shared().newSchema("store_kit");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE effects (id bigserial PRIMARY KEY, idem_key text NOT NULL)");
    }
    store = MyBatisProcessedEventStore.builder(sessions(dataSource)).createTableIfMissing(true).build();
  }

  @AfterAll
  static void stopStore() {
    dataSource.close();
  }

  static SqlSessionFactory sessions(javax.sql.DataSource ds) {
    return new SqlSessionFactoryBuilder()
        .build(new Configuration(new Environment("it", new JdbcTransactionFactory(), ds)));
  }

  @Override
  protected ProcessedEventStore<SqlSession> store() {
    return store;
  }

  @Override
  protected void recordEffect(SqlSession transaction, String key) throws Exception {
    try (PreparedStatement ps =
        transaction.getConnection().prepareStatement("INSERT INTO effects (idem_key) VALUES (?)")) {
      ps.setString(1, key);
      ps.executeUpdate();
    }
  }

  /** The same store on a closed port: nothing listens there, the connection is refused. */
  @Override
  protected ProcessedEventStore<SqlSession> unreachableStore() throws Exception {
    int closedPort;
    try (ServerSocket free = new ServerSocket(0)) {
      closedPort = free.getLocalPort();
    }
    PostgresFixture postgres = PostgresFixture.shared();
    UnpooledDataSource refused = new UnpooledDataSource("org.postgresql.Driver",
        "jdbc:postgresql://127.0.0.1:" + closedPort + "/postgres?connectTimeout=2", postgres.user(),
        postgres.password());
    return MyBatisProcessedEventStore.builder(sessions(refused)).verifyTable(false).build();
  }

  /** A duplicate primary key in the business table: SQLSTATE 23505, the work's own failure. */
  @Override
  protected void failingStatement(SqlSession transaction) throws Exception {
    try (Statement s = transaction.getConnection().createStatement()) {
      s.execute("INSERT INTO effects (id, idem_key) VALUES (-1, 'a'), (-1, 'b')");
    }
  }

  @Override
  protected int effectCount(String key) throws Exception {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM effects WHERE idem_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getInt(1);
      }
    }
  }
}
