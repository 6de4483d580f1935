package io.idem.http;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.PostgresFixture;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.startup.Tomcat;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.Configuration;
import org.apache.ibatis.session.SqlSession;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/** A schema with Idem's tables and an {@code orders} table, an embedded Tomcat, an HTTP client. */
final class HttpTests {
  private HttpTests() {}

  /** One test class's database: a fresh schema, the store, the stored responses. */
  static final class Db implements AutoCloseable {
    final HikariDataSource dataSource;
    final SqlSessionFactory sessions;
    final MyBatisProcessedEventStore store;
    final JdbcStoredResponses responses;

    Db(String prefix) {
      this(PostgresFixture.shared().newSchema(prefix));
    }

    Db(HikariDataSource dataSource) {
      this.dataSource = dataSource;
      this.sessions = sessionsOn(dataSource);
      this.store = JdbcStoredResponses.processedEventStore(sessions).createTableIfMissing(true).build();
      this.responses = JdbcStoredResponses.builder(sessions).createTableIfMissing(true).build();
      update("CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, client text,"
          + " amount integer NOT NULL, note text)");
    }

    static SqlSessionFactory sessionsOn(DataSource dataSource) {
      return new SqlSessionFactoryBuilder().build(
          new Configuration(new Environment("http-it", new JdbcTransactionFactory(), dataSource)));
    }

    long count(String sql) {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
          ResultSet rows = s.executeQuery(sql)) {
        rows.next();
        return rows.getLong(1);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    void update(String sql) {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute(sql);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    /** Rows of Idem's own tables and of orders, for "nothing was written". */
    long written() {
      return count("SELECT (SELECT count(*) FROM idem_processed_events)"
          + " + (SELECT count(*) FROM idem_http_responses) + (SELECT count(*) FROM orders)");
    }

    @Override
    public void close() {
      dataSource.close();
    }
  }

  /** Inserts an order through the transaction's connection; returns its generated id. */
  static long insertOrder(SqlSession session, String client, int amount) throws SQLException {
    try (PreparedStatement ps = session.getConnection().prepareStatement(
        "INSERT INTO orders (client, amount) VALUES (?, ?) RETURNING id")) {
      ps.setString(1, client);
      ps.setInt(2, amount);
      try (ResultSet rows = ps.executeQuery()) {
        rows.next();
        return rows.getLong(1);
      }
    }
  }

  /** An embedded Tomcat on a free port of 127.0.0.1. */
  static final class Server implements AutoCloseable {
    /** Tomcat logs through java.util.logging: its own errors only, as the fixtures' servers. */
    private static final java.util.logging.Logger TOMCAT_LOG = java.util.logging.Logger.getLogger("org.apache");

    static {
      TOMCAT_LOG.setLevel(java.util.logging.Level.SEVERE);
    }

    private final Tomcat tomcat = new Tomcat();
    private final Context context;
    private final Path base;

    Server() {
      try {
        base = Files.createTempDirectory("idem-http-tomcat");
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
      tomcat.setBaseDir(base.toString());
      tomcat.setHostname("127.0.0.1");
      tomcat.setPort(0);
      tomcat.getConnector().setProperty("address", "127.0.0.1");
      context = tomcat.addContext("", base.toString());
    }

    Server servlet(String path, HttpServlet servlet) {
      String name = "s" + path.hashCode();
      Tomcat.addServlet(context, name, servlet);
      context.addServletMappingDecoded(path, name);
      return this;
    }

    Server filter(String path, Filter filter) {
      FilterDef def = new FilterDef();
      def.setFilterName("f" + path.hashCode());
      def.setFilter(filter);
      context.addFilterDef(def);
      FilterMap map = new FilterMap();
      map.setFilterName(def.getFilterName());
      map.addURLPattern(path);
      context.addFilterMap(map);
      return this;
    }

    Server start() {
      try {
        tomcat.start();
      } catch (LifecycleException e) {
        throw new IllegalStateException("embedded Tomcat did not start: " + e.getMessage(), e);
      }
      return this;
    }

    URI uri(String path) {
      return URI.create("http://127.0.0.1:" + tomcat.getConnector().getLocalPort() + path);
    }

    @Override
    public void close() throws Exception {
      tomcat.stop();
      tomcat.destroy();
    }
  }

  static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  /** A POST with a JSON body and the given headers (name, value, name, value, …). */
  static HttpResponse<byte[]> post(URI uri, String body, String... headers) {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri)
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    try {
      return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Holds a handler, once {@link #close()}d, between its insert and its answer (its transaction
   * open, its claim held) until {@link #open()}: a request in flight for a test to race.
   */
  static final class Gate {
    private volatile java.util.concurrent.CountDownLatch hold;
    private volatile java.util.concurrent.CountDownLatch entered;

    /** The next handler to {@link #pass()} waits. */
    void close() {
      entered = new java.util.concurrent.CountDownLatch(1);
      hold = new java.util.concurrent.CountDownLatch(1);
    }

    /** Called by the handler: waits while the gate is closed (at most 30 s). */
    void pass() throws InterruptedException {
      java.util.concurrent.CountDownLatch entering = entered;
      java.util.concurrent.CountDownLatch waiting = hold;
      if (entering != null) {
        entering.countDown();
      }
      if (waiting != null) {
        waiting.await(30, java.util.concurrent.TimeUnit.SECONDS);
      }
    }

    /** Whether a handler reached the closed gate within 30 s. */
    boolean awaitHeld() throws InterruptedException {
      java.util.concurrent.CountDownLatch entering = entered;
      return entering != null && entering.await(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    /** Lets the held handler (and every later one) through. */
    void open() {
      java.util.concurrent.CountDownLatch waiting = hold;
      entered = null;
      hold = null;
      if (waiting != null) {
        waiting.countDown();
      }
    }
  }

  static String text(HttpResponse<byte[]> response) {
    return new String(response.body(), java.nio.charset.StandardCharsets.UTF_8);
  }

}
