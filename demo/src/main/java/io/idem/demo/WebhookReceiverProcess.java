package io.idem.demo;

import com.fasterxml.jackson.databind.JsonNode;
import io.idem.http.WebhookEndpoint;
import io.idem.http.WebhookSignature;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.catalina.Context;
import org.apache.catalina.startup.Tomcat;
import org.apache.ibatis.session.SqlSession;

/**
 * The webhook receiver of {@code --source webhooks}, run as a child process the demo kills with
 * SIGKILL at random moments: an embedded Tomcat serving {@code POST /webhooks/orders} with
 * idem-http's {@link WebhookEndpoint} — Stripe-style signatures verified first, the event id
 * ({@code id} of the body) claimed in the transaction of the handler's one mapper call ({@link
 * PaymentMapper}), 2xx only after the commit. Arguments: {@code --schema= --port= --secret=}.
 * Prints {@code READY} once it serves.
 */
public final class WebhookReceiverProcess {
  /** The path the sender posts to: {@value}. */
  static final String PATH = "/webhooks/orders";
  /** The receiver's consumer group: {@value}. */
  static final String GROUP = "webhooks";
  private static final Logger TOMCAT = Logger.getLogger("org.apache");

  private WebhookReceiverProcess() {}

  public static void main(String[] args) throws Exception {
    TOMCAT.setLevel(Level.WARNING);
    java.util.Map<String, String> options = new java.util.HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      options.put(arg.substring(2, eq), arg.substring(eq + 1));
    }
    DemoDatabase db = DemoDatabase.open(required(options, "schema"), 8);
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(db.sessions()).build();
    WebhookEndpoint<SqlSession> endpoint = WebhookEndpoint.builder(store)
        .consumerGroup(GROUP)
        .signature(WebhookSignature.stripe(required(options, "secret")))
        .handler((event, session) -> {
          JsonNode order = event.json().path("data").path("object");
          session.getMapper(PaymentMapper.class)
              .insertPayment(order.path("orderId").asText(), order.path("amountCents").asLong());
        })
        .build();
    Path base = Files.createTempDirectory("idem-demo-receiver");
    Tomcat tomcat = new Tomcat();
    tomcat.setBaseDir(base.toString());
    tomcat.setPort(Integer.parseInt(options.get("port")));
    tomcat.getConnector().setProperty("address", "127.0.0.1");
    Context context = tomcat.addContext("", base.toString());
    Tomcat.addServlet(context, "orders", endpoint.servlet());
    context.addServletMappingDecoded(PATH, "orders");
    tomcat.start();
    System.out.println("READY");
    System.out.flush();
    tomcat.getServer().await();
  }

  private static String required(java.util.Map<String, String> options, String name) {
    String value = options.get(name);
    if (value == null) {
      throw new IllegalArgumentException("missing --" + name + "=…");
    }
    return value;
  }
}
