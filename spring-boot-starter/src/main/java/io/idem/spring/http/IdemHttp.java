package io.idem.spring.http;

import io.idem.IdempotencyListener;
import io.idem.RetryPolicy;
import io.idem.http.ClientResolver;
import io.idem.http.IdempotencyKeyEndpoint;
import io.idem.http.JdbcStoredResponses;
import io.idem.http.WebhookEndpoint;
import io.idem.spring.SpringTransactionStore;
import java.util.Objects;
import java.util.function.Function;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;

/**
 * Idem's HTTP endpoints on the application's {@code DataSource} and transaction manager: builds
 * the {@link IdempotencyKeyEndpoint}s behind {@link IdempotentRequest} methods and {@link
 * WebhookEndpoint}s (those of {@code idem.http.webhooks.*}, or your own in code, registered as a
 * servlet: {@code new ServletRegistrationBean<>(endpoint.servlet(), "/webhooks/acme")}).
 *
 * <p>Two stores on one processed-events table: Idempotency-Key endpoints claim with {@code
 * idem.http.claim-lock-timeout} (1 ms: a repeat of an in-flight key is answered 409 at once),
 * webhook receivers with {@code idem.claim-lock-timeout} (a racing redelivery waits for the first
 * and is a duplicate). Thread-safe.
 */
public final class IdemHttp {
  private final SpringTransactionStore keyStore;
  private final SpringTransactionStore webhookStore;
  private final JdbcStoredResponses responses;
  private final IdemHttpProperties properties;
  private final RetryPolicy retryPolicy;
  private final ClientResolver clients;
  private final Function<String, @Nullable IdempotencyListener> listeners;

  IdemHttp(SpringTransactionStore keyStore, SpringTransactionStore webhookStore,
      JdbcStoredResponses responses, IdemHttpProperties properties, RetryPolicy retryPolicy,
      ClientResolver clients, Function<String, @Nullable IdempotencyListener> listeners) {
    this.keyStore = keyStore;
    this.webhookStore = webhookStore;
    this.responses = responses;
    this.properties = properties;
    this.retryPolicy = retryPolicy;
    this.clients = clients;
    this.listeners = listeners;
  }

  /** The stored-response table. */
  public JdbcStoredResponses responses() {
    return responses;
  }

  /**
   * An Idempotency-Key endpoint configured from {@code idem.http.*}, for a handler of your own
   * ({@link IdempotencyKeyEndpoint#servlet}); {@link IdempotentRequest} methods get theirs from here.
   *
   * @param consumerGroup the keys' namespace; {@code null} or blank for {@code idem.http.consumer-group}
   */
  public IdempotencyKeyEndpoint.Builder<SqlSession> idempotencyKeyEndpoint(@Nullable String consumerGroup) {
    String group = consumerGroup == null || consumerGroup.isBlank() ? properties.getConsumerGroup() : consumerGroup;
    IdempotencyKeyEndpoint.Builder<SqlSession> builder = IdempotencyKeyEndpoint.builder(keyStore, responses)
        .consumerGroup(group)
        .clientResolver(clients)
        .maxKeyLength(properties.getMaxKeyLength())
        .maxBodyBytes(properties.getMaxBodyBytes())
        .maxResponseBytes(properties.getMaxResponseBytes())
        .storedHeaders(properties.getStoredHeaders())
        .retryPolicy(retryPolicy);
    IdempotencyListener listener = listeners.apply(group);
    if (listener != null) {
      builder.listener(listener);
    }
    return builder;
  }

  /**
   * A webhook receiver on the application's store, with Idem's retry policy and the group's
   * listener; add its signature and handler, build it, register its servlet.
   */
  public WebhookEndpoint.Builder<SqlSession> webhook(String consumerGroup) {
    Objects.requireNonNull(consumerGroup, "consumerGroup");
    WebhookEndpoint.Builder<SqlSession> builder = WebhookEndpoint.builder(webhookStore)
        .consumerGroup(consumerGroup)
        .retryPolicy(retryPolicy);
    IdempotencyListener listener = listeners.apply(consumerGroup);
    if (listener != null) {
      builder.listener(listener);
    }
    return builder;
  }

  @Override
  public String toString() {
    return "IdemHttp[" + keyStore + ", " + responses + ", clients=" + clients + "]";
  }
}
