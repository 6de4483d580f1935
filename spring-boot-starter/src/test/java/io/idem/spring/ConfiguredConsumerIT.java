package io.idem.spring;

import static io.idem.spring.DropInTestSupport.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.idem.KeyedMessageHandler;
import io.idem.ProcessingOutcome;
import io.idem.fixtures.KafkaFixture;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.ibatis.session.SqlSession;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A consumer from configuration ({@code idem.consumers.billing.*}, Idem's own Kafka adapter) on a
 * handler bean that writes with the application's JdbcTemplate: started with the context, its
 * duplicate skipped, its health indicator UP, and its entry in the info contributor.
 */
@SpringBootTest(classes = ConfiguredConsumerIT.App.class, properties = {
    "spring.main.banner-mode=off",
    "idem.retention.enabled=false",
    "idem.consumers.billing.broker=kafka",
    "idem.consumers.billing.handler=billingHandler",
    "idem.consumers.billing.consumer-group=" + DropInListenerContract.GROUP,
    "idem.consumers.billing.shutdown-timeout=5s",
    "idem.consumers.billing.kafka-properties[auto.offset.reset]=earliest"})
class ConfiguredConsumerIT {
  static final String TOPIC = "spring-configured-" + UUID.randomUUID();

  @DynamicPropertySource
  static void kafka(DynamicPropertyRegistry registry) {
    KafkaFixture kafka = KafkaFixture.shared();
    kafka.createTopic(TOPIC, 1);
    registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    registry.add("idem.consumers.billing.source", () -> TOPIC);
  }

  @AfterAll
  static void deleteTopic() {
    KafkaFixture.shared().deleteTopic(TOPIC);
  }

  @Autowired KafkaTemplate<String, String> template;
  @Autowired DropInTestSupport.Payments payments;
  @Autowired DropInTestSupport.Outcomes outcomes;
  /** Spring Boot 4's or 3.5's CompositeHealthContributor ({@link BootLines#health}). */
  @Autowired @Qualifier("idemConsumersHealthContributor") Object idemConsumersHealthContributor;
  @Autowired IdemInfoContributor idemInfo;

  @Test
  void aConfiguredConsumerSkipsTheDuplicateAndReportsItsHealth() throws Exception {
    String key = "k-" + UUID.randomUUID();
    for (int i = 0; i < 2; i++) {
      ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, key, "pay 40");
      record.headers().add("idempotency-key", key.getBytes(StandardCharsets.UTF_8));
      template.send(record).get(30, TimeUnit.SECONDS);
    }

    await().atMost(WAIT).until(() -> outcomes.of(key).contains(ProcessingOutcome.DUPLICATE));
    assertThat(outcomes.of(key)).containsExactly(ProcessingOutcome.PROCESSED, ProcessingOutcome.DUPLICATE);
    assertThat(payments.rows(key)).isEqualTo(1);
    BootLines.HealthReading billing = BootLines.health(idemConsumersHealthContributor, "billing");
    assertThat(billing.status()).isEqualTo("UP");
    assertThat(billing.details()).containsEntry("storeAvailable", true);
    Info.Builder info = new Info.Builder();
    idemInfo.contribute(info);
    assertThat(info.build().get("idem")).asInstanceOf(InstanceOfAssertFactories.MAP)
        .containsEntry("consumerGroups", List.of(DropInListenerContract.GROUP))
        .containsEntry("consumers", Map.of("billing",
            Map.of("broker", "kafka", "source", TOPIC, "consumerGroup", DropInListenerContract.GROUP)));
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(DropInTestSupport.Beans.class)
  static class App {
    @Bean
    KeyedMessageHandler<SqlSession> billingHandler(DropInTestSupport.Payments payments) {
      return (key, message, session) ->
          payments.apply(key.value(), new String(message.payload(), StandardCharsets.UTF_8));
    }
  }
}
