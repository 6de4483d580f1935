package io.idem.spring;

import io.idem.IdempotencyListener;
import io.idem.MicrometerIdempotencyListener;
import io.idem.store.jdbc.Dialect;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Idem in a Spring Boot application, unless {@code idem.enabled=false} (the one way to turn it
 * off). Always: {@link IdemProperties} (validated; unknown {@code idem.*} properties refused by
 * {@link IdemPropertiesCheck}), the {@link Idempotent} support ({@link
 * IdempotentListenerPostProcessor}) and its start-up take-over of the listener containers ({@link
 * IdempotentListenerContainers}), which fails start-up when {@code @Idempotent} methods exist but
 * the store cannot be built. When the application has a {@link DataSource} bean ({@link Store}):
 * the {@link SpringTransactionStore} on the data source and transaction manager {@link
 * IdemStoreResolver} picks (failing start-up, naming what is missing and the property that picks
 * it, when it cannot decide), the {@link IdemPipelines} (a {@link MicrometerIdempotencyListener}
 * per consumer group when a {@link MeterRegistry} bean exists), the retention job, the consumers
 * of {@code idem.consumers.*} and the outbox ({@link IdemOutboxConfiguration}). Every bean backs
 * off when the application defines its own of the same type.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
    "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration",
    "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
    "org.springframework.boot.liquibase.autoconfigure.LiquibaseAutoConfiguration",
    // the same on Spring Boot 3.5 (-Pboot3), where they are in spring-boot-autoconfigure; names
    // of classes that are not there are ignored
    "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
    "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration",
    "org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration",
    "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
    "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration",
    "org.springframework.boot.autoconfigure.liquibase.LiquibaseAutoConfiguration"})
@ConditionalOnProperty(prefix = "idem", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
@Import(IdemAutoConfiguration.Store.class)
public class IdemAutoConfiguration {

  /** {@link Idempotent} on listener methods. Static: a post-processor, created early. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean
  public static IdempotentListenerPostProcessor idempotentListenerPostProcessor() {
    return new IdempotentListenerPostProcessor();
  }

  @Bean
  IdempotentListenerContainers idempotentListenerContainers(ApplicationContext context,
      ObjectProvider<IdempotentListenerPostProcessor> postProcessor, ObjectProvider<IdemPipelines> pipelines) {
    return new IdempotentListenerContainers(context, postProcessor, pipelines);
  }

  @Bean
  static IdemPropertiesCheck idemPropertiesCheck(ApplicationContext context) {
    return new IdemPropertiesCheck(context);
  }

  /** {@code idem.consumers.*} or an outbox relay configured without a store: refused, not ignored. */
  @Bean
  @ConditionalOnMissingBean(DataSource.class)
  org.springframework.beans.factory.SmartInitializingSingleton idemNeedsADataSource(IdemProperties properties) {
    return () -> {
      if (!properties.getConsumers().isEmpty() || properties.getOutbox().getPublisher() != null) {
        throw new IllegalStateException("Idem: " + (properties.getConsumers().isEmpty()
            ? "idem.outbox.publisher is set" : "idem.consumers " + properties.getConsumers().keySet()
            + " are configured") + ", but the application has no DataSource bean for Idem's tables:"
            + " add spring-boot-starter-jdbc with spring.datasource.url, or turn Idem off with idem.enabled=false");
      }
    };
  }

  /** Everything on the database: when the application has at least one DataSource. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBean(DataSource.class)
  @Import(IdemOutboxConfiguration.class)
  static class Store {
    /** The store, built (and its table checked) once the application's migrations ran. */
    @Bean
    @ConditionalOnMissingBean
    @DependsOnDatabaseInitialization
    public SpringTransactionStore idemStore(IdemProperties properties, ConfigurableListableBeanFactory beans) {
      DataSource dataSource = IdemStoreResolver.dataSource(beans, properties);
      var transactionManager = IdemStoreResolver.transactionManager(beans, properties, dataSource);
      IdemProperties.Schema schema = properties.getSchema();
      boolean flyway = schema == IdemProperties.Schema.FLYWAY
          || (schema == IdemProperties.Schema.AUTO && applicationHasFlyway(beans));
      Dialect dialect = IdemStoreResolver.dialect(dataSource);
      if (flyway) {
        IdemFlyway.migrate(dataSource, dialect == null ? Dialect.POSTGRESQL : dialect);
      }
      return SpringTransactionStore.create(dataSource, transactionManager, builder -> builder
          .dialect(dialect)
          .tableName(properties.getTableName())
          .claimLockTimeout(properties.getClaimLockTimeout())
          .createTableIfMissing(!flyway && schema != IdemProperties.Schema.NONE));
    }

    @Bean
    @ConditionalOnMissingBean
    public IdemPipelines idemPipelines(SpringTransactionStore store, IdemProperties properties,
        ObjectProvider<IdemListenerFactory> listeners) {
      IdemListenerFactory factory = listeners.getIfAvailable();
      Function<String, @Nullable IdempotencyListener> perGroup =
          factory == null ? group -> null : factory::listener;
      return new IdemPipelines(store, properties, perGroup);
    }

    /** store-jdbc's retention job on the store's table ({@code idem.retention.*}). */
    @Bean(initMethod = "start", destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "idem.retention", name = "enabled", matchIfMissing = true)
    public RetentionJob idemRetentionJob(SpringTransactionStore store, IdemProperties properties) {
      MyBatisProcessedEventStore delegate = store.delegate();
      return RetentionJob.builder(delegate)
          .retention(properties.getRetention().getRetention())
          .interval(properties.getRetention().getInterval())
          .acceptReplaysBeyondWindow(properties.getRetention().isAcceptReplaysBeyondWindow())
          .build(); // no horizons yet: the listeners' are checked at start-up (IdempotentListenerContainers)
    }

    /** {@code idem.consumers.*}, started and stopped with the context. */
    @Bean
    @ConditionalOnMissingBean
    public IdemConsumers idemConsumers(IdemProperties properties, IdemPipelines pipelines,
        ListableBeanFactory beans, Environment environment) {
      return new IdemConsumers(properties, pipelines, beans, environment);
    }
  }

  /** Whether the application migrates with Flyway: Flyway on the classpath and a Flyway bean. */
  static boolean applicationHasFlyway(ListableBeanFactory beans) {
    ClassLoader loader = IdemAutoConfiguration.class.getClassLoader();
    if (!ClassUtils.isPresent("org.flywaydb.core.Flyway", loader)) {
      return false;
    }
    Class<?> flyway = ClassUtils.resolveClassName("org.flywaydb.core.Flyway", loader);
    return beans.getBeanNamesForType(flyway, false, false).length > 0;
  }

  /** {@code idem} in {@code /actuator/info}, when Actuator is there. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.info.InfoContributor")
  static class Info {
    @Bean
    @ConditionalOnMissingBean(name = "idemInfoContributor")
    IdemInfoContributor idemInfoContributor(IdemProperties properties,
        ObjectProvider<IdempotentListenerPostProcessor> listeners) {
      return new IdemInfoContributor(properties, listeners);
    }
  }

  /** The Micrometer listener per consumer group, when the application has a MeterRegistry. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  static class Metrics {
    @Bean
    @ConditionalOnMissingBean
    IdemListenerFactory idemMicrometerListeners(ObjectProvider<MeterRegistry> registries) {
      return group -> {
        MeterRegistry registry = registries.getIfAvailable();
        return registry == null ? null : new MicrometerIdempotencyListener(registry, group);
      };
    }
  }
}
