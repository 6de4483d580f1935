package io.idem.spring;

import io.idem.IdempotencyListener;
import io.idem.MicrometerIdempotencyListener;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.store.jdbc.RetentionJob;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.function.Function;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportSelector;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.context.annotation.Role;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.ClassUtils;

/**
 * Idem on a Spring Boot application's {@link DataSource} and {@link PlatformTransactionManager}:
 * the {@link SpringTransactionStore} (schema per {@code idem.schema}, after the application's own
 * Flyway or Liquibase ran), the {@link IdemPipelines} (a {@link MicrometerIdempotencyListener}
 * per consumer group when a {@link MeterRegistry} bean exists), the retention job, and the
 * {@link Idempotent} listener support with its start-up checks. Every bean backs off when the
 * application defines its own of the same type.
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
@ConditionalOnBean({DataSource.class, PlatformTransactionManager.class})
@ConditionalOnProperty(prefix = "idem", name = "enabled", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
@Import(IdemAutoConfiguration.ConsumersHealth.class)
public class IdemAutoConfiguration {

  /** The store, built (and its table checked) once the application's migrations ran. */
  @Bean
  @ConditionalOnMissingBean
  @DependsOnDatabaseInitialization
  public SpringTransactionStore idemStore(
      DataSource dataSource, PlatformTransactionManager transactionManager, IdemProperties properties,
      ListableBeanFactory beans) {
    IdemProperties.Schema schema = properties.getSchema();
    boolean flyway = schema == IdemProperties.Schema.FLYWAY
        || (schema == IdemProperties.Schema.AUTO && applicationHasFlyway(beans));
    if (flyway) {
      IdemFlyway.migrate(dataSource);
    }
    return SpringTransactionStore.create(dataSource, transactionManager, builder -> builder
        .tableName(properties.getTableName())
        .claimLockTimeout(properties.getClaimLockTimeout())
        .createTableIfMissing(!flyway && schema != IdemProperties.Schema.NONE));
  }

  /** Whether the application migrates with Flyway: Flyway on the classpath and a Flyway bean. */
  private static boolean applicationHasFlyway(ListableBeanFactory beans) {
    ClassLoader loader = IdemAutoConfiguration.class.getClassLoader();
    if (!ClassUtils.isPresent("org.flywaydb.core.Flyway", loader)) {
      return false;
    }
    Class<?> flyway = ClassUtils.resolveClassName("org.flywaydb.core.Flyway", loader);
    return beans.getBeanNamesForType(flyway, false, false).length > 0;
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
        .build();
  }

  /** {@link Idempotent} on listener methods. Static: a post-processor, created early. */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  @ConditionalOnMissingBean
  public static IdempotentListenerPostProcessor idempotentListenerPostProcessor() {
    return new IdempotentListenerPostProcessor();
  }

  @Bean
  IdempotentListenerContainerChecks idempotentListenerContainerChecks(ApplicationContext context,
      ObjectProvider<IdempotentListenerPostProcessor> postProcessor) {
    return new IdempotentListenerContainerChecks(context, postProcessor);
  }

  /** {@code idem.consumers.*}, started and stopped with the context. */
  @Bean
  @ConditionalOnMissingBean
  public IdemConsumers idemConsumers(IdemProperties properties, IdemPipelines pipelines,
      ListableBeanFactory beans, Environment environment) {
    return new IdemConsumers(properties, pipelines, beans, environment);
  }

  /**
   * One Actuator health indicator per {@code idem.consumers.<name>}: imports the registration this
   * jar was compiled with, {@link IdemConsumersHealth}'s on Spring Boot 4's health API or, built
   * with {@code -Pboot3}, {@code Boot3ConsumersHealth}'s on Spring Boot 3.5's. Each backs off when
   * its line's health classes are not on the classpath, so importing every one present is safe.
   */
  static final class ConsumersHealth implements ImportSelector {
    private static final List<String> REGISTRATIONS = List.of(
        "io.idem.spring.IdemConsumersHealth$Registration",
        "io.idem.spring.Boot3ConsumersHealth$Registration");

    @Override
    public String[] selectImports(AnnotationMetadata metadata) {
      ClassLoader loader = ConsumersHealth.class.getClassLoader();
      return REGISTRATIONS.stream()
          .filter(registration -> ClassUtils.isPresent(registration, loader))
          .toArray(String[]::new);
    }
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
