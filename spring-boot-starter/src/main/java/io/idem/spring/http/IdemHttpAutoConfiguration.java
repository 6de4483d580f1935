package io.idem.spring.http;

import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.RetryPolicy;
import io.idem.http.ClientResolver;
import io.idem.http.JdbcStoredResponses;
import io.idem.http.WebhookEndpoint;
import io.idem.http.WebhookHandler;
import io.idem.http.WebhookSignature;
import io.idem.spring.IdemAutoConfiguration;
import io.idem.spring.IdemListenerFactory;
import io.idem.spring.IdemProperties;
import io.idem.spring.SpringTransactionStore;
import jakarta.servlet.ServletRegistration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.ServletContextInitializer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;

/**
 * idem-http in a Spring MVC application (docs/SPRING-BOOT.md, "HTTP"): {@link IdemHttp} on the
 * application's data source and transaction manager, {@link IdempotentRequest} controller methods,
 * the webhook receivers of {@code idem.http.webhooks.*}, and the start-up check that refuses to
 * serve any of them without a store. Needs idem-http and Spring MVC on the classpath and a servlet
 * web application.
 */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@ConditionalOnClass(name = {"io.idem.http.IdempotencyKeyEndpoint",
    "org.springframework.web.servlet.DispatcherServlet"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@EnableConfigurationProperties(IdemHttpProperties.class)
public class IdemHttpAutoConfiguration {

  /** Never inert: annotated endpoints or configured webhooks without a store fail the start-up. */
  @Bean
  static IdemHttpStartupCheck idemHttpStartupCheck(ListableBeanFactory beans, Environment environment,
      IdemHttpProperties properties) {
    return new IdemHttpStartupCheck(beans, environment, properties);
  }

  /** Everything that needs the store. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBean(SpringTransactionStore.class)
  static class Endpoints {

    @Bean
    @ConditionalOnMissingBean
    IdemHttp idemHttp(SpringTransactionStore store, DataSource dataSource,
        PlatformTransactionManager transactionManager, IdemProperties idem, IdemHttpProperties http,
        ObjectProvider<ClientResolver> clients, ObjectProvider<IdemListenerFactory> listeners) {
      if (idem.getRetention().isEnabled() && idem.getRetention().getRetention().compareTo(http.getRetryWindow()) < 0) {
        throw new IllegalStateException("idem.retention.retention (" + idem.getRetention().getRetention()
            + ") is shorter than idem.http.retry-window (" + http.getRetryWindow() + "): a client retrying"
            + " after its key's marker and stored response were purged would be applied again; raise"
            + " idem.retention.retention or lower idem.http.retry-window");
      }
      // the claim sets the lock timeout back itself, in its own round trip (on PostgreSQL; MariaDB's
      // claim bounds its own statement only): no reset of the stored responses before the handler
      SpringTransactionStore keyStore = SpringTransactionStore.create(dataSource, transactionManager,
          builder -> builder.tableName(idem.getTableName()).claimLockTimeout(http.getClaimLockTimeout())
              .restoreLockTimeoutAfterClaim(http.isResetLockTimeout()));
      JdbcStoredResponses responses = JdbcStoredResponses.builder(dataSource)
          .tableName(http.getTableName())
          .processedEventsTable(idem.getTableName())
          .resetLockTimeout(false)
          .createTableIfMissing(idem.getSchema() != IdemProperties.Schema.NONE)
          .build();
      IdemListenerFactory factory = listeners.getIfAvailable();
      Function<String, @Nullable IdempotencyListener> perGroup =
          factory == null ? group -> null : factory::listener;
      return new IdemHttp(keyStore, store, responses, http, retryPolicy(idem.getRetry()),
          clients.getIfAvailable(() -> clientResolver(http)), perGroup);
    }

    @Bean
    IdempotentRequestHandlerAdapter idempotentRequestHandlerAdapter(IdemHttp http,
        ObjectProvider<RequestMappingHandlerAdapter> delegate) {
      return new IdempotentRequestHandlerAdapter(http, delegate);
    }

    /** The servlets of {@code idem.http.webhooks.*}, each at its path. */
    @Bean
    ServletContextInitializer idemWebhookServlets(IdemHttp http, IdemHttpProperties properties,
        ListableBeanFactory beans) {
      Map<String, WebhookEndpoint<SqlSession>> endpoints = new LinkedHashMap<>();
      Map<String, String> paths = new LinkedHashMap<>();
      properties.getWebhooks().forEach((name, webhook) -> {
        String prefix = "idem.http.webhooks." + name + ".";
        paths.put(name, required(prefix + "path", webhook.getPath()));
        WebhookEndpoint.Builder<SqlSession> builder = http.webhook(
                webhook.getConsumerGroup() == null ? name : webhook.getConsumerGroup())
            .signature(signature(prefix, webhook))
            .maxBodyBytes(webhook.getMaxBodyBytes())
            .handler(handler(prefix, required(prefix + "handler", webhook.getHandler()), beans));
        if (webhook.getKeyHeader() != null) {
          builder.keyExtractor(IdempotencyKeyExtractor.header(webhook.getKeyHeader()));
        } else if (webhook.getKeyJsonPointer() != null) {
          builder.keyExtractor(IdempotencyKeyExtractor.jsonPointer(webhook.getKeyJsonPointer()));
        }
        endpoints.put(name, builder.build());
      });
      return servletContext -> endpoints.forEach((name, endpoint) -> {
        ServletRegistration.Dynamic registration = servletContext.addServlet("idemWebhook-" + name, endpoint.servlet());
        registration.addMapping(paths.get(name));
      });
    }
  }

  private static ClientResolver clientResolver(IdemHttpProperties http) {
    if (http.isSharedClients()) {
      return ClientResolver.shared();
    }
    return http.getClientHeader() != null ? ClientResolver.header(http.getClientHeader()) : ClientResolver.principal();
  }

  private static RetryPolicy retryPolicy(IdemProperties.Retry retry) {
    return RetryPolicy.builder()
        .maxAttempts(retry.getMaxAttempts())
        .initialBackoff(retry.getInitialBackoff())
        .maxBackoff(retry.getMaxBackoff())
        .multiplier(retry.getMultiplier())
        .jitter(retry.getJitter())
        .build();
  }

  private static WebhookSignature signature(String prefix, IdemHttpProperties.Webhook webhook) {
    IdemHttpProperties.Scheme scheme = webhook.getScheme();
    if (scheme == null) {
      throw new IllegalStateException(prefix + "scheme must be set (stripe, github, standard-webhooks), but was not");
    }
    String[] secrets = webhook.getSecrets().toArray(String[]::new);
    if (secrets.length == 0) {
      throw new IllegalStateException(prefix + "secrets must name at least one signing secret, but was empty");
    }
    return switch (scheme) {
      case STRIPE -> WebhookSignature.stripe(webhook.getTolerance(), secrets);
      case GITHUB -> WebhookSignature.github(secrets);
      case STANDARD_WEBHOOKS -> WebhookSignature.standardWebhooks(webhook.getTolerance(), secrets);
    };
  }

  @SuppressWarnings("unchecked")
  private static WebhookHandler<SqlSession> handler(String prefix, String name, ListableBeanFactory beans) {
    if (!beans.containsBean(name)) {
      throw new IllegalStateException(prefix + "handler names bean '" + name + "', which does not exist");
    }
    Object bean = beans.getBean(name);
    if (!(bean instanceof WebhookHandler<?> handler)) {
      throw new IllegalStateException(prefix + "handler names bean '" + name + "' of "
          + bean.getClass().getName() + ", which is not a WebhookHandler<SqlSession>");
    }
    return (WebhookHandler<SqlSession>) handler;
  }

  private static String required(String property, @Nullable String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalStateException(property + " must be set, but was not");
    }
    return value;
  }
}
