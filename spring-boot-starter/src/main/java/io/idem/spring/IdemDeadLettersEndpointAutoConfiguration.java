package io.idem.spring;

import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import io.idem.store.jdbc.DeadLetterDecisions;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.web.PathMapper;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * {@link IdemDeadLettersEndpoint}, when {@code idem.dead-letters.endpoint.enabled=true} (off by
 * default), Spring Boot Actuator and {@code idem-dead-letters} are on the class path, and the
 * application has a {@link DataSource}: on the application's {@link DeadLetterDestination} beans,
 * the processed-events table {@code idem.table-name} and the actions table {@code
 * idem_dead_letter_actions} (created when missing with {@code
 * idem.dead-letters.endpoint.create-actions-table=true}, else it must exist:
 * {@code db/migration/idem/V7__dead_letter_actions.sql}).
 */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@org.springframework.boot.context.properties.EnableConfigurationProperties(IdemProperties.class)
@ConditionalOnClass({Endpoint.class, DeadLetterOperations.class})
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "idem.dead-letters.endpoint", name = "enabled", havingValue = "true")
public class IdemDeadLettersEndpointAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  IdemDeadLettersEndpoint idemDeadLettersEndpoint(ObjectProvider<DeadLetterDestination> destinations,
      DataSource dataSource, IdemProperties properties,
      org.springframework.core.env.Environment environment) {
    boolean create = environment.getProperty("idem.dead-letters.endpoint.create-actions-table", Boolean.class, false);
    return new IdemDeadLettersEndpoint(destinations.orderedStream().toList(),
        DeadLetterDecisions.of(dataSource, properties.getTableName()),
        DeadLetterActions.builder(dataSource).createTableIfMissing(create).build());
  }

  /** Serves the endpoint at {@code /actuator/idem-dead-letters}: ids cannot hold a dash without a warning. */
  @Bean
  PathMapper idemDeadLettersPath() {
    return id -> IdemDeadLettersEndpoint.ID.equals(id.toString()) ? IdemDeadLettersEndpoint.PATH : null;
  }
}
