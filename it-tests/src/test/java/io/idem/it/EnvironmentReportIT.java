package io.idem.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Resolves every server the suite uses and prints where each came from: an environment variable,
 * Testcontainers, a local service, or an in-process server. A server that cannot be had fails the
 * test with the fixture's message, which says how to provide one.
 */
class EnvironmentReportIT {

  private record Server(String name, String variable, Supplier<String> origin) {}

  private record Row(String name, String source, String where) {}

  private static final List<Server> SERVERS = List.of(
      new Server("PostgreSQL", "IDEM_POSTGRES_URL", () -> PostgresFixture.shared().origin()),
      new Server("Kafka", "IDEM_KAFKA_BOOTSTRAP", () -> KafkaFixture.shared().origin()),
      new Server("RabbitMQ", "IDEM_RABBITMQ_URI", () -> RabbitFixture.shared().origin()),
      new Server("SQS", "IDEM_SQS_ENDPOINT", () -> SqsFixture.shared().origin()),
      new Server("JMS (Artemis)", "IDEM_JMS_URL", () -> ArtemisFixture.shared().origin()));

  @Test
  void everyServerResolvesAndTheReportSaysWhereEachCameFrom() {
    List<Row> rows = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    for (Server server : SERVERS) {
      try {
        String origin = server.origin().get();
        rows.add(new Row(server.name(), source(origin), origin));
      } catch (RuntimeException e) {
        rows.add(new Row(server.name(), "UNAVAILABLE", String.valueOf(e.getMessage())));
        failures.add(server.name() + ": " + e.getMessage());
      }
    }
    System.out.println(table(rows));

    assertThat(failures).as("servers that could not be had").isEmpty();
    for (int i = 0; i < SERVERS.size(); i++) {
      Server server = SERVERS.get(i);
      Row row = rows.get(i);
      assertThat(row.source()).as("kind of source of %s (origin '%s')", server.name(), row.where())
          .isNotEqualTo("unknown");
      String env = System.getenv(server.variable());
      if (env != null && !env.isBlank()) {
        assertThat(row.source()).as("%s is set, so %s must come from it", server.variable(), server.name())
            .isEqualTo("environment variable");
      } else {
        assertThat(row.source()).as("%s is not set", server.variable()).isNotEqualTo("environment variable");
      }
    }
  }

  /** The kind of source, from the fixture's origin line. */
  static String source(String origin) {
    if (origin.startsWith("IDEM_")) {
      return "environment variable";
    }
    if (origin.startsWith("Testcontainers")) {
      return "Testcontainers";
    }
    if (origin.startsWith("local")) {
      return "local service";
    }
    String lower = origin.toLowerCase(Locale.ROOT);
    if (lower.contains("in-jvm") || lower.contains("in-process") || lower.contains("embedded")) {
      return "in-process";
    }
    return "unknown";
  }

  private static String table(List<Row> rows) {
    StringBuilder out = new StringBuilder("\nServers for the integration suite\n");
    String format = "  %-14s %-21s %s%n";
    out.append(String.format(Locale.ROOT, format, "server", "source", "where"));
    for (Row r : rows) {
      out.append(String.format(Locale.ROOT, format, r.name(), r.source(), r.where()));
    }
    return out.toString();
  }
}
