package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.IdempotencyKey;
import io.idem.KeySource;
import io.idem.MicrometerIdempotencyListener;
import io.idem.fixtures.PostgresFixture;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import jakarta.jms.ConnectionFactory;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.actuate.info.Info;
import org.springframework.boot.actuate.info.InfoContributor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jms.annotation.JmsListener;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The starter's wiring and its refusals, each in a small application context on real PostgreSQL:
 * what would acknowledge before Idem's commit, or run inside a transaction Idem does not own,
 * fails at start-up (or, for an outer transaction, before anything is claimed) with the reason.
 */
class IdemAutoConfigurationIT {
  private static final String SCHEMA = "spring_autoconf_" + Long.toHexString(System.nanoTime());
  /** The refused contexts are logged by Spring at WARN as they fail: expected here. */
  private static final ch.qos.logback.classic.Logger SPRING_CONTEXT =
      (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.springframework.context");
  private static ch.qos.logback.classic.Level contextLevel;

  @BeforeAll
  static void schema() {
    PostgresFixture.shared().createSchema(SCHEMA);
    contextLevel = SPRING_CONTEXT.getLevel();
    SPRING_CONTEXT.setLevel(ch.qos.logback.classic.Level.ERROR);
  }

  @AfterAll
  static void restoreLogging() {
    SPRING_CONTEXT.setLevel(contextLevel);
  }

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withPropertyValues("idem.retention.enabled=false")
      .withBean(DataSource.class, () -> PostgresFixture.shared().dataSource(SCHEMA, 4))
      .withConfiguration(BootLines.autoConfigurations(BootLines.DATA_SOURCE,
          BootLines.DATA_SOURCE_TRANSACTION_MANAGER, BootLines.TRANSACTION))
      .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class));

  @Test
  void theStoreRunsOnTheApplicationsTransactionManagerAndCreatesItsTable() {
    runner.run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(SpringTransactionStore.class)
          .hasSingleBean(IdemPipelines.class).hasSingleBean(IdempotentListenerPostProcessor.class);
      assertThat(context.getBean(SpringTransactionStore.class).delegate().tableName())
          .isEqualTo("idem_processed_events");
    });
  }

  @Test
  void insideAnOuterSpringTransactionNothingIsClaimed() {
    runner.run(context -> {
      SpringTransactionStore store = context.getBean(SpringTransactionStore.class);
      IdempotencyKey key = new IdempotencyKey("g", "outer-1", KeySource.HEADER);
      new TransactionTemplate(context.getBean(PlatformTransactionManager.class)).executeWithoutResult(
          status -> assertThatThrownBy(() -> store.inTransaction(session -> store.claim(session, key, new byte[32])))
              .isInstanceOf(IllegalStateException.class)
              .hasMessageContaining("already inside a Spring transaction"));
      assertThat(store.isProcessed(key)).isFalse();
    });
  }

  @Test
  void aMeterRegistryGetsEachPipelinesMicrometerListener() {
    runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(context ->
        assertThat(context.getBean(IdemListenerFactory.class).listener("billing"))
            .isInstanceOf(MicrometerIdempotencyListener.class));
  }

  @Test
  @SuppressWarnings("unchecked")
  void theInfoContributorNamesTheVersionTheListenersAndTheirConsumerGroups() {
    runner.withBean(KafkaBilling.class).run(context -> {
      Info.Builder builder = new Info.Builder();
      context.getBean(IdemInfoContributor.class).contribute(builder);
      Map<String, Object> idem = (Map<String, Object>) builder.build().get("idem");
      assertThat((String) idem.get("version")).matches("\\d+\\.\\d+\\.\\d+.*");
      assertThat(idem).containsEntry("consumerGroups", List.of("billing"))
          .containsEntry("listeners", Map.of("KafkaBilling.on", Map.of("kind", "kafka", "consumerGroup", "billing")))
          .containsEntry("consumers", Map.of());
    });
  }

  @Test
  void withoutActuatorThereIsNoInfoContributor() {
    runner.withClassLoader(new FilteredClassLoader(InfoContributor.class)).run(context ->
        assertThat(context).hasNotFailed().doesNotHaveBean(IdemInfoContributor.class));
  }

  @Test
  void aListenerThatCouldAcknowledgeItselfIsRefused() {
    runner.withBean(AcknowledgingListener.class).run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("Acknowledgment")
            .hasMessageContaining("before Idem's transaction commits"));
  }

  @Test
  void aListenerWithoutTheNativeMessageIsRefused() {
    runner.withBean(PayloadOnlyListener.class).run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("must take the container's native message"));
  }

  @Test
  void aJmsContainerThatAcknowledgesAtReceiveIsRefused() {
    runner.withConfiguration(BootLines.autoConfigurations(BootLines.JMS))
        .withBean(ConnectionFactory.class, DropInTestSupport::artemisConnectionFactory)
        .withBean(JmsBilling.class)
        .withPropertyValues("spring.jms.listener.session.transacted=false",
            "spring.jms.listener.session.acknowledge-mode=auto")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("acks at receive, before the listener runs"));
  }

  @Test
  void aRabbitContainerWithoutAcknowledgementsIsRefused() {
    runner.withConfiguration(BootLines.autoConfigurations(BootLines.RABBIT))
        .withBean(RabbitBilling.class)
        .withPropertyValues("spring.rabbitmq.listener.simple.acknowledge-mode=none")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("AcknowledgeMode.NONE"));
  }

  /**
   * A setting no pipeline can be built with stops the application at start: found only at the
   * first message, it failed every message, and Spring Kafka's default error handler skipped them.
   */
  @Test
  void aRetryPolicyThatCannotBeBuiltStopsTheApplicationAtStart() {
    runner.withPropertyValues("idem.retry.max-attempts=0").run(context ->
        assertThat(context).getFailure().hasMessageContaining("invalid idem.* setting")
            .hasMessageContaining("maxAttempts"));
  }

  @Test
  void anSqsListenerThatDeletesFailedMessagesIsRefused() {
    runner.withBean(DeletingSqsListener.class).run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("acknowledgementMode ALWAYS"));
  }

  static class DeletingSqsListener {
    @io.awspring.cloud.sqs.annotation.SqsListener(value = "never-consumed", acknowledgementMode = "ALWAYS")
    @Idempotent(consumerGroup = "billing")
    public void on(org.springframework.messaging.Message<String> message) {}
  }

  static class KafkaBilling {
    @KafkaListener(topics = "never-consumed", autoStartup = "false")
    @Idempotent(consumerGroup = "billing")
    public void on(ConsumerRecord<String, String> record) {}
  }

  static class AcknowledgingListener {
    @KafkaListener(topics = "never-consumed", autoStartup = "false")
    @Idempotent(consumerGroup = "billing")
    public void on(ConsumerRecord<String, String> record, Acknowledgment acknowledgment) {}
  }

  static class PayloadOnlyListener {
    @KafkaListener(topics = "never-consumed", autoStartup = "false")
    @Idempotent(consumerGroup = "billing")
    public void on(String payload) {}
  }

  static class JmsBilling {
    @JmsListener(destination = "never-consumed")
    @Idempotent(consumerGroup = "billing")
    public void on(jakarta.jms.Message message) {}
  }

  static class RabbitBilling {
    @RabbitListener(queues = "never-consumed")
    @Idempotent(consumerGroup = "billing")
    public void on(Message message) {}
  }
}
