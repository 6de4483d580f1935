package com.example.bomcheck;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * Every fixture starts (or resolves) and answers on the BOM's versions: the embedded Artemis is
 * the one that failed with UnsatisfiedLinkError when Netty 4.1 and 4.2 were mixed.
 */
class FixturesStartIT {
  private final String run = UUID.randomUUID().toString().substring(0, 8);

  @Test
  void kafka() {
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic("bom-fixture-" + run, 1);
    kafka.deleteTopic("bom-fixture-" + run);
    assertThat(kafka.bootstrapServers()).isNotBlank();
  }

  @Test
  void sqs() {
    SqsFixture sqs = SqsFixture.shared();
    try (SqsClient client = sqs.newClient()) {
      String url = sqs.createQueue(client, "bom-fixture-" + run, Map.of());
      assertThat(client.listQueues().queueUrls()).contains(url);
      sqs.deleteQueue(client, url);
    }
  }

  @Test
  void artemis() {
    ArtemisFixture artemis = ArtemisFixture.shared();
    artemis.createQueue("bom-fixture-" + run);
    assertThat(artemis.queueExists("bom-fixture-" + run)).isTrue();
    artemis.deleteQueue("bom-fixture-" + run);
  }

  @Test
  void rabbitMq() throws Exception {
    try (var connection = RabbitFixture.shared().connectionFactory().newConnection("bom-fixture-" + run)) {
      var channel = connection.createChannel();
      String queue = channel.queueDeclare().getQueue(); // server-named, exclusive, auto-delete
      assertThat(channel.messageCount(queue)).isZero();
    }
  }

  @Test
  void postgresql() throws Exception {
    try (HikariDataSource db = PostgresFixture.shared().newSchema("bom_fixture");
        Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_schema()")) {
      rs.next();
      assertThat(rs.getString(1)).startsWith("bom_fixture_");
    }
  }

  @Test
  void mariaDb() throws Exception {
    try (HikariDataSource db = MariaDbFixture.shared().newDatabase("bom_fixture");
        Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT DATABASE()")) {
      rs.next();
      assertThat(rs.getString(1)).startsWith("bom_fixture_");
    }
  }
}
