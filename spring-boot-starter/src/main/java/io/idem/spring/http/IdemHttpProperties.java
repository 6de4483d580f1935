package io.idem.spring.http;

import io.idem.http.IdempotencyKeyEndpoint;
import io.idem.http.JdbcStoredResponses;
import io.idem.http.WebhookEndpoint;
import io.idem.http.WebhookSignature;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** {@code idem.http.*}: Idempotency-Key endpoints and webhook receivers (docs/SPRING-BOOT.md, "HTTP"). */
@ConfigurationProperties("idem.http")
public class IdemHttpProperties {
  /** Default {@code idem.http.consumer-group}: {@value}. */
  public static final String DEFAULT_CONSUMER_GROUP = IdempotencyKeyEndpoint.DEFAULT_CONSUMER_GROUP;
  /** Default {@code idem.http.retry-window}: 24 hours. */
  public static final Duration DEFAULT_RETRY_WINDOW = Duration.ofHours(24);

  private String consumerGroup = DEFAULT_CONSUMER_GROUP;
  private String tableName = JdbcStoredResponses.DEFAULT_TABLE;
  private Duration claimLockTimeout = JdbcStoredResponses.IN_FLIGHT_CLAIM_LOCK_TIMEOUT;
  private Duration retryWindow = DEFAULT_RETRY_WINDOW;
  private boolean resetLockTimeout = true;
  private int maxKeyLength = IdempotencyKeyEndpoint.DEFAULT_MAX_KEY_LENGTH;
  private int maxBodyBytes = IdempotencyKeyEndpoint.DEFAULT_MAX_BODY_BYTES;
  private int maxResponseBytes = IdempotencyKeyEndpoint.DEFAULT_MAX_RESPONSE_BYTES;
  private List<String> storedHeaders = new ArrayList<>(IdempotencyKeyEndpoint.DEFAULT_STORED_HEADERS);
  private @Nullable String clientHeader;
  private boolean sharedClients;
  private Map<String, Webhook> webhooks = new LinkedHashMap<>();

  /** The consumer group of {@code @IdempotentRequest} methods that name none. */
  public String getConsumerGroup() {
    return consumerGroup;
  }

  public void setConsumerGroup(String consumerGroup) {
    this.consumerGroup = consumerGroup;
  }

  /** The stored-response table, {@code table} or {@code schema.table}. */
  public String getTableName() {
    return tableName;
  }

  public void setTableName(String tableName) {
    this.tableName = tableName;
  }

  /**
   * How long an Idempotency-Key claim waits behind the same key's in-flight request before the
   * repeat is answered 409; default 1 ms (at once). Webhook receivers use {@code
   * idem.claim-lock-timeout} (a redelivery racing the first waits for it, then is a duplicate).
   */
  public Duration getClaimLockTimeout() {
    return claimLockTimeout;
  }

  public void setClaimLockTimeout(Duration claimLockTimeout) {
    this.claimLockTimeout = claimLockTimeout;
  }

  /**
   * How long clients (and webhook senders) retry a request: stored responses and markers must
   * outlive it, so start-up refuses an {@code idem.retention.retention} shorter than this.
   */
  public Duration getRetryWindow() {
    return retryWindow;
  }

  public void setRetryWindow(Duration retryWindow) {
    this.retryWindow = retryWindow;
  }

  /**
   * Default {@code true}: after the claim, the handler's lock waits get the connection's {@code
   * lock_timeout} back — the claim keeps it and sets it back in its own round trip (store-jdbc's
   * {@code restoreLockTimeoutAfterClaim}, no round trip of its own); {@code false} leaves them the
   * claim's 1 ms, for handlers that only insert new rows (docs/HTTP.md, "In flight").
   */
  public boolean isResetLockTimeout() {
    return resetLockTimeout;
  }

  public void setResetLockTimeout(boolean resetLockTimeout) {
    this.resetLockTimeout = resetLockTimeout;
  }

  public int getMaxKeyLength() {
    return maxKeyLength;
  }

  public void setMaxKeyLength(int maxKeyLength) {
    this.maxKeyLength = maxKeyLength;
  }

  /** Largest request body accepted, in bytes (413 above it); default 1 MiB. */
  public int getMaxBodyBytes() {
    return maxBodyBytes;
  }

  public void setMaxBodyBytes(int maxBodyBytes) {
    this.maxBodyBytes = maxBodyBytes;
  }

  /** Largest response kept and stored, in bytes; default 1 MiB. */
  public int getMaxResponseBytes() {
    return maxResponseBytes;
  }

  public void setMaxResponseBytes(int maxResponseBytes) {
    this.maxResponseBytes = maxResponseBytes;
  }

  /** Response headers stored and replayed. */
  public List<String> getStoredHeaders() {
    return storedHeaders;
  }

  public void setStoredHeaders(List<String> storedHeaders) {
    this.storedHeaders = storedHeaders;
  }

  /**
   * A header set by a trusted front (an API gateway) naming the client, to scope keys by; default
   * none: the request's authenticated principal. A {@code ClientResolver} bean replaces both.
   */
  public @Nullable String getClientHeader() {
    return clientHeader;
  }

  public void setClientHeader(@Nullable String clientHeader) {
    this.clientHeader = clientHeader;
  }

  /** {@code true}: one key namespace for every caller (no client identity needed). Default false. */
  public boolean isSharedClients() {
    return sharedClients;
  }

  public void setSharedClients(boolean sharedClients) {
    this.sharedClients = sharedClients;
  }

  /** Webhook receivers, by name. */
  public Map<String, Webhook> getWebhooks() {
    return webhooks;
  }

  public void setWebhooks(Map<String, Webhook> webhooks) {
    this.webhooks = webhooks;
  }

  /** A signature scheme of {@code idem.http.webhooks.<name>.scheme}. */
  public enum Scheme {
    /** {@link WebhookSignature#stripe}. */
    STRIPE,
    /** {@link WebhookSignature#github}. */
    GITHUB,
    /** {@link WebhookSignature#standardWebhooks}. */
    STANDARD_WEBHOOKS
  }

  /** {@code idem.http.webhooks.<name>.*}: one receiver, served at {@code path}. */
  public static class Webhook {
    private @Nullable String path;
    private @Nullable Scheme scheme;
    private List<String> secrets = new ArrayList<>();
    private Duration tolerance = WebhookSignature.DEFAULT_TOLERANCE;
    private @Nullable String handler;
    private @Nullable String consumerGroup;
    private @Nullable String keyHeader;
    private @Nullable String keyJsonPointer;
    private int maxBodyBytes = WebhookEndpoint.DEFAULT_MAX_BODY_BYTES;

    /** Required: the servlet path, e.g. {@code /webhooks/stripe}. */
    public @Nullable String getPath() {
      return path;
    }

    public void setPath(@Nullable String path) {
      this.path = path;
    }

    /** Required: {@code stripe}, {@code github} or {@code standard-webhooks}. */
    public @Nullable Scheme getScheme() {
      return scheme;
    }

    public void setScheme(@Nullable Scheme scheme) {
      this.scheme = scheme;
    }

    /** Required: the signing secret(s); two during a rotation. */
    public List<String> getSecrets() {
      return secrets;
    }

    public void setSecrets(List<String> secrets) {
      this.secrets = secrets;
    }

    /** The signed timestamp's tolerance (Stripe, Standard Webhooks); default 5 minutes. */
    public Duration getTolerance() {
      return tolerance;
    }

    public void setTolerance(Duration tolerance) {
      this.tolerance = tolerance;
    }

    /** Required: the name of a {@code WebhookHandler<SqlSession>} bean. */
    public @Nullable String getHandler() {
      return handler;
    }

    public void setHandler(@Nullable String handler) {
      this.handler = handler;
    }

    /** The namespace of the event ids; default the receiver's name. */
    public @Nullable String getConsumerGroup() {
      return consumerGroup;
    }

    public void setConsumerGroup(@Nullable String consumerGroup) {
      this.consumerGroup = consumerGroup;
    }

    /** Read the event id from this header instead of the scheme's own place. */
    public @Nullable String getKeyHeader() {
      return keyHeader;
    }

    public void setKeyHeader(@Nullable String keyHeader) {
      this.keyHeader = keyHeader;
    }

    /** Read the event id from this JSON pointer into the body instead. */
    public @Nullable String getKeyJsonPointer() {
      return keyJsonPointer;
    }

    public void setKeyJsonPointer(@Nullable String keyJsonPointer) {
      this.keyJsonPointer = keyJsonPointer;
    }

    public int getMaxBodyBytes() {
      return maxBodyBytes;
    }

    public void setMaxBodyBytes(int maxBodyBytes) {
      this.maxBodyBytes = maxBodyBytes;
    }
  }
}
