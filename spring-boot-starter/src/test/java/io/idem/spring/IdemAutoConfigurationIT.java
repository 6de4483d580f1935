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

  /** With Spring Boot's Kafka auto-configuration: the containers exist (never started here). */
  private ApplicationContextRunner kafka() {
    return runner.withConfiguration(BootLines.autoConfigurations(BootLines.KAFKA))
        .withPropertyValues("spring.kafka.bootstrap-servers=127.0.0.1:9");
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

  /**
   * The attempt counts of unaccounted redeliveries (docs/FAILURES.md, "Attempts that survive the
   * process") reach store-jdbc's table through the starter's store: counted in their own committed
   * transaction, cleared only by a committed message transaction.
   */
  @Test
  void attemptCountsGoThroughToTheInnerStore() {
    runner.run(context -> {
      SpringTransactionStore store = context.getBean(SpringTransactionStore.class);
      IdempotencyKey key = new IdempotencyKey("g", "attempts-1", KeySource.HEADER);
      assertThat(store.startAttempt(key)).isEqualTo(1);
      assertThat(store.startAttempt(key)).isEqualTo(2);
      assertThatThrownBy(() -> store.inTransaction(session -> {
        store.clearAttempts(session, key);
        throw new IllegalStateException("rolled back");
      })).hasMessage("rolled back");
      assertThat(store.startAttempt(key)).isEqualTo(3);
      store.inTransaction(session -> {
        store.clearAttempts(session, key);
        return null;
      });
      assertThat(store.startAttempt(key)).isEqualTo(1);
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
    kafka().withBean(KafkaBilling.class).run(context -> {
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

  /** A POJO listener is taken (no start-up refusal of String/POJO listeners any more) … */
  /** The outbox relay of idem.outbox.* runs with the context and stops with it. */
  @Test
  void theOutboxRelayStartsAndStopsWithTheContext() {
    IdemOutboxRelay[] relay = new IdemOutboxRelay[1];
    kafka().withPropertyValues("idem.outbox.publisher=kafka").run(context -> {
      assertThat(context).hasNotFailed().hasSingleBean(IdemOutbox.class)
          .hasSingleBean(io.idem.store.jdbc.Outbox.class);
      relay[0] = context.getBean(IdemOutboxRelay.class);
      assertThat(relay[0].isRunning()).isTrue();
      // stopped and started again (Spring's test context pausing does so): a new relay runs
      io.idem.store.jdbc.OutboxRelay first = relay[0].relay();
      context.stop();
      assertThat(relay[0].isRunning()).isFalse();
      context.start();
      assertThat(relay[0].isRunning()).isTrue();
      assertThat(relay[0].relay()).isNotSameAs(first);
    });
    assertThat(relay[0].isRunning()).as("stopped with the context").isFalse();
  }

  @Test
  void aPojoListenerIsTakenOver() {
    kafka().withBean(PayloadOnlyListener.class).run(context -> assertThat(context).hasNotFailed());
  }

  /** … but an @Idempotent method no container calls is refused, not left inert. */
  @Test
  void anIdempotentMethodNoContainerCallsIsRefused() {
    runner.withBean(PayloadOnlyListener.class).run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("PayloadOnlyListener.on is @Idempotent, but no kafka listener container calls it"));
  }

  @Test
  void aKafkaContainerWithManualAcknowledgementIsRefused() {
    kafka().withBean(KafkaBilling.class).withPropertyValues("spring.kafka.listener.ack-mode=manual")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("has AckMode MANUAL").hasMessageContaining("spring.kafka.listener.ack-mode"));
  }

  @Test
  void aKafkaValueDeserializerThatGivesNoBytesIsRefused() {
    kafka().withBean(KafkaBilling.class)
        .withPropertyValues("spring.kafka.consumer.value-deserializer=org.apache.kafka.common.serialization.LongDeserializer")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("LongDeserializer").hasMessageContaining("String or byte[]"));
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
  void aRabbitContainerWithManualAcknowledgementsOrARetryInterceptorIsRefused() {
    runner.withConfiguration(BootLines.autoConfigurations(BootLines.RABBIT))
        .withBean(RabbitBilling.class)
        .withPropertyValues("spring.rabbitmq.listener.simple.acknowledge-mode=manual",
            "spring.rabbitmq.listener.simple.retry.enabled=true")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("AcknowledgeMode.MANUAL")
            .hasMessageContaining("retry interceptor")
            .hasMessageContaining("spring.rabbitmq.listener.simple.retry.enabled=false"));
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
        assertThat(context).getFailure().hasStackTraceContaining("idem.retry: maxAttempts must be >= 1, but was 0"));
  }

  @Test
  void anSqsListenerThatDeletesFailedMessagesIsRefused() {
    runner.withBean(DeletingSqsListener.class).run(context ->
        assertThat(context).getFailure().rootCause()
            .hasMessageContaining("acknowledgementMode ALWAYS"));
  }

  /**
   * Issue 24, case 2: a container factory whose acknowledgement mode is ALWAYS (the annotation
   * says nothing) deleted a message that failed once — no effect, no dead letter. Refused at
   * start-up, naming the container, the setting and the fix.
   */
  @Test
  void anSqsContainerFactoryThatDeletesFailedMessagesIsRefused() {
    runner.withUserConfiguration(SqsAlways.class)
        .withBean(FactorySqsListener.class)
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("acknowledgement mode ALWAYS")
            .hasMessageContaining("SQS container")
            .hasMessageContaining("acknowledgementMode(AcknowledgementMode.ON_SUCCESS)"));
  }

  /** The application's SQS client and a container factory that acknowledges ALWAYS. */
  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  @org.springframework.context.annotation.Import(io.awspring.cloud.sqs.config.SqsBootstrapConfiguration.class)
  static class SqsAlways {
    @org.springframework.context.annotation.Bean
    software.amazon.awssdk.services.sqs.SqsAsyncClient sqsAsyncClient() {
      io.idem.fixtures.SqsFixture sqs = io.idem.fixtures.SqsFixture.shared();
      return software.amazon.awssdk.services.sqs.SqsAsyncClient.builder().endpointOverride(sqs.endpoint())
          .region(software.amazon.awssdk.regions.Region.of(sqs.region()))
          .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
              software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create("idem", "idem")))
          .build();
    }

    @org.springframework.context.annotation.Bean
    io.awspring.cloud.sqs.config.SqsMessageListenerContainerFactory<Object> defaultSqsListenerContainerFactory(
        software.amazon.awssdk.services.sqs.SqsAsyncClient client) {
      return io.awspring.cloud.sqs.config.SqsMessageListenerContainerFactory.builder()
          .sqsAsyncClient(client)
          .configure(options -> options.acknowledgementMode(
              io.awspring.cloud.sqs.listener.acknowledgement.handler.AcknowledgementMode.ALWAYS))
          .build();
    }
  }

  static class FactorySqsListener {
    @io.awspring.cloud.sqs.annotation.SqsListener(value = "never-consumed")
    @Idempotent(consumerGroup = "billing")
    public void on(org.springframework.messaging.Message<String> message) {}
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
