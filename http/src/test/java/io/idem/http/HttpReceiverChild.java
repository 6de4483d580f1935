package io.idem.http;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.idem.testkit.CrashInjector;
import java.sql.PreparedStatement;
import java.util.UUID;
import org.apache.ibatis.session.SqlSession;

/**
 * The crash victim of {@link HttpCrashIT}: an embedded Tomcat with an Idempotency-Key endpoint
 * ({@code POST /orders}) and a Stripe webhook receiver ({@code POST /hooks/stripe}) on the schema
 * it is given, whose pipelines carry testkit's {@link CrashInjector} from {@code idem.crash.*}
 * (AFTER_COMMIT: halted right after the commit, before the answer is written). Prints {@code
 * LISTENING <port>} once it serves.
 */
public final class HttpReceiverChild {
  static final String STRIPE_SECRET = "whsec_crash_test";

  private HttpReceiverChild() {}

  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(System.getProperty("idem.it.url"));
    config.setUsername(System.getProperty("idem.it.user"));
    String password = System.getProperty("idem.it.password", "");
    if (!password.isEmpty()) {
      config.setPassword(password);
    }
    config.setSchema(System.getProperty("idem.it.schema"));
    config.setMaximumPoolSize(4);
    HttpTests.Db db = new HttpTests.Db(new HikariDataSource(config));
    CrashInjector crash = CrashInjector.fromSystemProperties();
    IdempotencyKeyEndpoint<SqlSession> orders = IdempotencyKeyEndpoint.builder(db.store, db.responses)
        .consumerGroup("orders-api")
        .clientResolver(ClientResolver.header("X-Client"))
        .listener(crash)
        .build();
    WebhookEndpoint<SqlSession> stripe = WebhookEndpoint.builder(db.store)
        .consumerGroup("stripe")
        .signature(WebhookSignature.stripe(STRIPE_SECRET))
        .listener(crash)
        .handler((event, session) -> {
          try (PreparedStatement ps = session.getConnection().prepareStatement(
              "INSERT INTO orders (client, amount, note) VALUES ('stripe', 1, ?)")) {
            ps.setString(1, event.id());
            ps.executeUpdate();
          }
        })
        .build();
    HttpTests.Server server = new HttpTests.Server()
        .servlet("/orders", orders.servlet((request, response, session) -> {
          long id = HttpTests.insertOrder(session, request.getHeader("X-Client"), 5);
          response.setStatus(201);
          response.setContentType("application/json");
          response.getWriter().write("{\"id\":" + id + ",\"nonce\":\"" + UUID.randomUUID() + "\"}");
        }))
        .servlet("/hooks/stripe", stripe.servlet())
        .start();
    System.out.println("LISTENING " + server.uri("/").getPort());
    System.out.flush();
    Thread.currentThread().join();
  }
}
