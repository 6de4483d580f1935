package io.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.MariaDbFixture;
import io.idem.spi.ProcessedEventStore;
import io.idem.testkit.ProcessedEventStoreCompatibilityKit;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import org.apache.ibatis.datasource.unpooled.UnpooledDataSource;
import org.apache.ibatis.session.SqlSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store compatibility kit on the real MariaDB (a database of its own on the shared server). */
class MariaDbProcessedEventStoreIT extends ProcessedEventStoreCompatibilityKit<SqlSession> {
  private static HikariDataSource dataSource;
  private static MyBatisProcessedEventStore store;

  @BeforeAll
  static void startStore() throws Exception {
    dataSource = MariaDbFixture.shared().newDatabase("store_kit");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE effects (id bigint AUTO_INCREMENT PRIMARY KEY,"
          + " idem_key text CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL)");
    }
    store = MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(dataSource))
        .createTableIfMissing(true).build();
    assertThat(store.dialect()).isEqualTo(Dialect.MARIADB);
  }

  @AfterAll
  static void stopStore() {
    dataSource.close();
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
    MariaDbFixture mariadb = MariaDbFixture.shared();
    UnpooledDataSource refused = new UnpooledDataSource("org.mariadb.jdbc.Driver",
        "jdbc:mariadb://127.0.0.1:" + closedPort + "/idem?connectTimeout=2000&sslMode=disable",
        mariadb.user(), mariadb.password());
    return MyBatisProcessedEventStore.builder(MyBatisProcessedEventStoreIT.sessions(refused))
        .dialect(Dialect.MARIADB).verifyTable(false).build();
  }

  /** A duplicate primary key in the business table: error 1062, the work's own failure. */
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
