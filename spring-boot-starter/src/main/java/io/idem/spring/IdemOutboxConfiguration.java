package io.idem.spring;

import io.idem.spi.OutboxPublisher;
import io.idem.store.jdbc.Outbox;
import io.idem.store.jdbc.OutboxRelay;
import org.apache.ibatis.mapping.Environment;
import org.apache.ibatis.session.SqlSessionFactory;
import org.apache.ibatis.session.SqlSessionFactoryBuilder;
import org.apache.ibatis.transaction.jdbc.JdbcTransactionFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.ConfigurationCondition;

/**
 * The transactional outbox in the starter ({@code idem.outbox.*}): the {@link Outbox} over the
 * table (created with Idem's schema: by Idem's Flyway migration, or {@code createTableIfMissing}
 * unless {@code idem.schema=none}), the {@link IdemOutbox} that Spring code enqueues with inside
 * its transaction, and — when the application names a publisher ({@code idem.outbox.publisher}) or
 * has an {@link OutboxPublisher} bean — the {@link OutboxRelay}, started and stopped with the
 * context ({@link IdemOutboxRelay}), with a health indicator ({@code idemOutboxRelay}).
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(prefix = "idem.outbox", name = "enabled", matchIfMissing = true)
class IdemOutboxConfiguration {
  private static final Logger LOG = LoggerFactory.getLogger(IdemOutboxConfiguration.class);

  @Bean
  @ConditionalOnMissingBean
  Outbox idemOutboxTable(SpringTransactionStore store, IdemProperties properties, ListableBeanFactory beans) {
    IdemOutboxProperties outbox = properties.getOutbox();
    IdemProperties.Schema schema = properties.getSchema();
    boolean migrated = (schema == IdemProperties.Schema.FLYWAY
        || (schema == IdemProperties.Schema.AUTO && IdemAutoConfiguration.applicationHasFlyway(beans)))
        && outbox.getTableName().equals(Outbox.DEFAULT_TABLE);
    if (!migrated && schema != IdemProperties.Schema.NONE) {
      Outbox.createTableIfMissing(store.dataSource(), outbox.getTableName());
    }
    return Outbox.of(outbox.getTableName());
  }

  @Bean
  @ConditionalOnMissingBean
  IdemOutbox idemOutbox(Outbox outbox, SpringTransactionStore store, ObjectProvider<IdemOutboxRelay> relays) {
    if (relays.getIfAvailable() == null) {
      LOG.info("no outbox relay runs in this application (neither idem.outbox.publisher nor an"
          + " OutboxPublisher bean): rows enqueued in {} wait for a relay elsewhere", outbox.tableName());
    }
    return new IdemOutbox(outbox, store.sessions());
  }

  @Bean
  @ConditionalOnMissingBean
  @Conditional(HasPublisher.class)
  @ConditionalOnProperty(prefix = "idem.outbox.relay", name = "enabled", matchIfMissing = true)
  IdemOutboxRelay idemOutboxRelay(SpringTransactionStore store, IdemProperties properties,
      ObjectProvider<OutboxPublisher> publishers, ListableBeanFactory beans) {
    IdemOutboxProperties outbox = properties.getOutbox();
    IdemOutboxProperties.Relay relay = outbox.getRelay();
    boolean ours = outbox.getPublisher() != null;
    java.util.function.Supplier<OutboxPublisher> publisher = ours
        ? () -> IdemOutboxPublishers.create(outbox.getPublisher(), outbox, beans)
        : publishers::getObject;
    SqlSessionFactory sessions = new SqlSessionFactoryBuilder().build(new org.apache.ibatis.session.Configuration(
        new Environment("idem-outbox-relay", new JdbcTransactionFactory(), store.dataSource())));
    return new IdemOutboxRelay(publisher, p -> {
      OutboxRelay.Builder builder = OutboxRelay.builder(sessions, p)
          .tableName(outbox.getTableName())
          .pollInterval(relay.getPollInterval())
          .closeTimeout(relay.getCloseTimeout())
          .leaseDuration(relay.getLeaseDuration())
          .retryPolicy(relay.retryPolicy())
          .name(relay.getName());
      Integer batchSize = relay.getBatchSize();
      if (batchSize != null) { // unset: the relay's default for this publisher
        builder.batchSize(batchSize);
      }
      return builder.build();
    }, ours);
  }

  /** {@code idem.outbox.publisher} is set, or the application has an {@link OutboxPublisher} bean. */
  static final class HasPublisher extends AnyNestedCondition {
    HasPublisher() {
      super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnProperty(prefix = "idem.outbox", name = "publisher")
    static final class Named {}

    @ConditionalOnBean(OutboxPublisher.class)
    static final class Bean {}
  }
}
