package io.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.idem.fixtures.PostgresFixture;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Issue 24, case 3: {@code @Idempotent} is never silently inert. With two {@code DataSource}
 * beans and no {@code @Primary}, or without a transaction manager, the application used to start
 * normally with Idem backed off, the listener not proxied, a duplicate applied twice. Now start-up
 * fails naming what is missing and the property that picks it ({@code idem.datasource}, {@code
 * idem.transaction-manager}); {@code idem.enabled=false} stays the one way to turn Idem off; a
 * typo under {@code idem.*} and a value out of range fail start-up. Small application contexts on
 * real PostgreSQL with Spring Boot's Kafka auto-configuration (containers never started).
 */
class IdemNeverInertIT {
  private static final String FIRST = "spring_inert_a_" + Long.toHexString(System.nanoTime());
  private static final String SECOND = "spring_inert_b_" + Long.toHexString(System.nanoTime());
  private static final ch.qos.logback.classic.Logger SPRING_CONTEXT =
      (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("org.springframework.context");
  private static ch.qos.logback.classic.Level contextLevel;

  @BeforeAll
  static void schemas() {
    PostgresFixture.shared().createSchema(FIRST);
    PostgresFixture.shared().createSchema(SECOND);
    contextLevel = SPRING_CONTEXT.getLevel();
    SPRING_CONTEXT.setLevel(ch.qos.logback.classic.Level.ERROR);
  }

  @AfterAll
  static void restoreLogging() {
    SPRING_CONTEXT.setLevel(contextLevel);
  }

  /** A pool per context: the context closes its DataSource beans. */
  private static DataSource first() {
    return PostgresFixture.shared().dataSource(FIRST, 2);
  }

  private static DataSource second() {
    return PostgresFixture.shared().dataSource(SECOND, 2);
  }

  /** Kafka, the transaction managers' auto-configuration and Idem's; data sources added per test. */
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withPropertyValues("idem.retention.enabled=false", "spring.kafka.bootstrap-servers=127.0.0.1:9")
      .withConfiguration(BootLines.autoConfigurations(BootLines.DATA_SOURCE_TRANSACTION_MANAGER,
          BootLines.TRANSACTION, BootLines.KAFKA))
      .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
      .withBean(Billing.class);

  @Test
  void twoDataSourcesWithoutAPrimaryFailStartUpNamingBothAndTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("2 DataSource beans [first, second] and none is @Primary")
            .hasMessageContaining("idem.datasource"));
  }

  @Test
  void idemDatasourcePicksOneOfThemAndItsTransactionManager() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .withUserConfiguration(SecondTransactions.class)
        .withPropertyValues("idem.datasource=second")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(SpringTransactionStore.class).dataSource()).isSameAs(context.getBean("second"));
          assertThat(AopUtils.isAopProxy(context.getBean(Billing.class))).as("the listener is Idem's").isTrue();
        });
  }

  @Test
  void withoutATransactionManagerStartUpFailsNamingIt() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .withPropertyValues("idem.datasource=first")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("no PlatformTransactionManager bean")
            .hasMessageContaining("idem.transaction-manager"));
  }

  @Test
  void withoutADataSourceAnIdempotentListenerFailsStartUp() {
    runner.run(context -> assertThat(context).getFailure().rootCause()
        .hasMessageContaining("[Billing.on] need Idem's processed-events store")
        .hasMessageContaining("no DataSource bean")
        .hasMessageContaining("idem.enabled=false"));
  }

  @Test
  void idemEnabledFalseIsTheOneWayToTurnItOff() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withPropertyValues("idem.enabled=false")
        .run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(SpringTransactionStore.class)
              .doesNotHaveBean(IdempotentListenerPostProcessor.class);
          assertThat(AopUtils.isAopProxy(context.getBean(Billing.class))).isFalse();
        });
  }

  @Test
  void aTypoUnderIdemFailsStartUpNamingTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first)
        .withPropertyValues("idem.retry.max-attemps=15", "idem.consumer-grup=billing")
        .run(context -> assertThat(context).getFailure()
            .hasMessageContaining("unknown properties under idem.*")
            .hasMessageContaining("idem.retry.max-attemps")
            .hasMessageContaining("idem.consumer-grup"));
  }

  @Test
  void aValueOutOfRangeFailsStartUpNamingTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withPropertyValues("idem.claim-lock-timeout=-1s")
        .run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("idem.claim-lock-timeout must not be negative, but was PT-1S"));
  }

  /**
   * A consumer's batch size below 1, and a RabbitMQ prefetch outside AMQP's 1..65535 (too large
   * on one consumer, 0 on another), stop start-up naming each consumer's property and its value,
   * all in one report; nothing is started.
   */
  @Test
  void aConsumersBatchSizeOrPrefetchOutOfRangeFailsStartUpNamingTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first)
        .withPropertyValues("idem.consumers.payments.broker=rabbitmq", "idem.consumers.payments.source=payments",
            "idem.consumers.payments.handler=paymentsHandler", "idem.consumers.payments.max-batch-size=0",
            "idem.consumers.payments.prefetch=65536",
            "idem.consumers.refunds.broker=sqs", "idem.consumers.refunds.source=http://127.0.0.1:9/q",
            "idem.consumers.refunds.handler=refundsHandler", "idem.consumers.refunds.max-batch-size=-3",
            "idem.consumers.refunds.prefetch=0")
        .run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("idem.consumers.payments.max-batch-size must be >= 1 (1 is per-message"
                + " mode), but was 0")
            .hasStackTraceContaining("idem.consumers.payments.prefetch must be in 1..65535, but was 65536")
            .hasStackTraceContaining("idem.consumers.refunds.max-batch-size must be >= 1 (1 is per-message"
                + " mode), but was -3")
            .hasStackTraceContaining("idem.consumers.refunds.prefetch must be in 1..65535, but was 0"));
  }

  @Test
  void aRelayLeaseThatIsNotPositiveFailsStartUpNamingTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first)
        .withPropertyValues("idem.outbox.relay.lease-duration=0s")
        .run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("idem.outbox.relay.lease-duration must be positive, but was PT0S"));
  }

  /** One DataSource, Spring Boot's transaction manager auto-configuration left out. */
  @Test
  void oneDataSourceWithoutATransactionManagerFailsStartUpNamingIt() {
    new ApplicationContextRunner()
        .withPropertyValues("idem.retention.enabled=false", "spring.kafka.bootstrap-servers=127.0.0.1:9")
        .withConfiguration(BootLines.autoConfigurations(BootLines.TRANSACTION, BootLines.KAFKA))
        .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
        .withBean(Billing.class)
        .withBean("first", DataSource.class, IdemNeverInertIT::first)
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("no PlatformTransactionManager bean")
            .hasMessageContaining("idem.transaction-manager"));
  }

  @Test
  void aPrimaryDataSourceIsIdemsWithoutTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first, definition -> definition.setPrimary(true))
        .withBean("second", DataSource.class, IdemNeverInertIT::second)
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(SpringTransactionStore.class).dataSource()).isSameAs(context.getBean("first"));
          assertThat(AopUtils.isAopProxy(context.getBean(Billing.class))).as("the listener is Idem's").isTrue();
        });
  }

  @Test
  void twoPrimaryDataSourcesFailStartUpNamingTheProperty() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first, definition -> definition.setPrimary(true))
        .withBean("second", DataSource.class, IdemNeverInertIT::second, definition -> definition.setPrimary(true))
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("2 DataSource beans [first, second] and several are @Primary")
            .hasMessageContaining("idem.datasource"));
  }

  @Test
  void idemDatasourceNamingNoBeanFailsStartUpNamingTheBeans() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .withPropertyValues("idem.datasource=third")
        .run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("idem.datasource names 'third'")
            .hasStackTraceContaining("[first, second]"));
  }

  @Test
  void idemTransactionManagerNamingNoBeanFailsStartUpNamingTheBeans() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first)
        .withPropertyValues("idem.transaction-manager=billingTransactions")
        .run(context -> assertThat(context).getFailure()
            .hasStackTraceContaining("idem.transaction-manager names 'billingTransactions'")
            .hasStackTraceContaining("[transactionManager]"));
  }

  /** The only transaction manager manages the other DataSource: Idem's marker would not commit with the writes. */
  @Test
  void aTransactionManagerOfAnotherDataSourceFailsStartUp() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .withUserConfiguration(SecondTransactions.class)
        .withPropertyValues("idem.datasource=first")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("none of the PlatformTransactionManager beans [secondTransactions] manages Idem's DataSource")
            .hasMessageContaining("idem.transaction-manager"));
  }

  @Test
  void idemTransactionManagerOfAnotherDataSourceFailsStartUp() {
    runner.withBean("first", DataSource.class, IdemNeverInertIT::first).withBean("second", DataSource.class, IdemNeverInertIT::second)
        .withUserConfiguration(SecondTransactions.class)
        .withPropertyValues("idem.datasource=first", "idem.transaction-manager=secondTransactions")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining("idem.transaction-manager 'secondTransactions' manages another DataSource"));
  }

  @Test
  void twoTransactionManagersOfIdemsDataSourceFailStartUpUnlessTheOneIsNamed() {
    ApplicationContextRunner twoManagers = runner.withBean("first", DataSource.class, IdemNeverInertIT::first)
        .withUserConfiguration(TwoFirstTransactions.class);
    twoManagers.run(context -> assertThat(context).getFailure().rootCause()
        .hasMessageContaining("several PlatformTransactionManager beans manage Idem's DataSource")
        .hasMessageContaining("billingTransactions").hasMessageContaining("reportingTransactions")
        .hasMessageContaining("idem.transaction-manager"));
    twoManagers.withPropertyValues("idem.transaction-manager=billingTransactions").run(context -> {
      assertThat(context).hasNotFailed();
      assertThat(AopUtils.isAopProxy(context.getBean(Billing.class))).as("the listener is Idem's").isTrue();
    });
  }

  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class TwoFirstTransactions {
    @org.springframework.context.annotation.Bean
    PlatformTransactionManager billingTransactions(DataSource first) {
      return new DataSourceTransactionManager(first);
    }

    @org.springframework.context.annotation.Bean
    PlatformTransactionManager reportingTransactions(DataSource first) {
      return new DataSourceTransactionManager(first);
    }
  }

  @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
  static class SecondTransactions {
    @org.springframework.context.annotation.Bean
    PlatformTransactionManager secondTransactions(
        @org.springframework.beans.factory.annotation.Qualifier("second") DataSource second) {
      return new DataSourceTransactionManager(second);
    }
  }

  static class Billing {
    @KafkaListener(topics = "never-consumed", autoStartup = "false")
    @Idempotent(consumerGroup = "billing")
    public void on(ConsumerRecord<String, String> record) {}
  }
}
