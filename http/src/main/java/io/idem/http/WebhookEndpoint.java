package io.idem.http;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyKeyExtractor;
import io.idem.IdempotencyListener;
import io.idem.KeyExtraction;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.http.internal.BodyView;
import io.idem.http.internal.BufferedRequest;
import io.idem.http.internal.Exchange;
import io.idem.http.internal.HttpMessage;
import io.idem.http.internal.HttpPipeline;
import io.idem.http.internal.JsonCheck;
import io.idem.http.internal.Problems;
import io.idem.http.internal.RequestBodies;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.Settings;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A webhook receiver with Idem's guarantee: the sender's event id is the idempotency key, claimed
 * in the same transaction as the handler's writes, and the sender hears 2xx only after that
 * transaction committed. Per request, in this order (docs/HTTP.md):
 *
 * <ol>
 *   <li>the body is read (over {@link Builder#maxBodyBytes}: 413) and the signature verified
 *       ({@link WebhookSignature}: 400 or 401) — before anything else is read or written;
 *   <li>a body under a JSON content type must be valid JSON (400); the event id is read with the
 *       key extractor (none or unusable: 400);
 *   <li>the id is claimed and the {@link WebhookHandler} runs in that transaction; after the
 *       commit: 200 {@code {"status":"processed"}};
 *   <li>an id already committed: 200 {@code {"status":"duplicate"}} without running the handler;
 *       the same id with another body: 422; the same id still in another request's transaction:
 *       it is waited for (the store's claim lock timeout), then answered as a duplicate, or 409;
 *   <li>the handler failed: rolled back, 500 (with {@code Retry-After} when retryable), so the
 *       sender redelivers; the database unavailable: 503.
 * </ol>
 *
 * <p>Thread-safe: one endpoint serves every request thread.
 *
 * @param <C> the store's transaction context
 */
public final class WebhookEndpoint<C> {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookEndpoint.class);
  private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

  /** Default {@link Builder#maxBodyBytes}: 1 MiB. */
  public static final int DEFAULT_MAX_BODY_BYTES = 1 << 20;

  private final HttpPipeline<C> pipeline;
  private final String consumerGroup;
  private final WebhookSignature signature;
  private final IdempotencyKeyExtractor keys;
  private final WebhookHandler<C> handler;
  private final int maxBodyBytes;
  private final Clock clock;

  private WebhookEndpoint(Builder<C> b, WebhookSignature signature, WebhookHandler<C> handler) {
    this.consumerGroup = Objects.requireNonNull(b.consumerGroup, "consumerGroup");
    this.signature = signature;
    this.keys = b.keys != null ? b.keys : signature.defaultKeyExtractor();
    this.handler = handler;
    this.maxBodyBytes = b.maxBodyBytes;
    this.clock = b.clock;
    this.pipeline = new HttpPipeline<>(b.store, consumerGroup, b.retryPolicy, b.detectPayloadConflicts,
        OversizedKeyPolicy.REJECT, b.listeners);
  }

  /** Starts a receiver on {@code store}. */
  public static <C> Builder<C> builder(ProcessedEventStore<C> store) {
    return new Builder<>(store);
  }

  /** The consumer group of this receiver's event ids. */
  public String consumerGroup() {
    return consumerGroup;
  }

  /** Serves one delivery (the steps of the class documentation). */
  public void serve(HttpServletRequest request, HttpServletResponse response) throws IOException {
    byte[] body = RequestBodies.read(request, maxBodyBytes);
    if (body == null) {
      reject(response, Problems.BODY_TOO_LARGE, "the request body is larger than the " + maxBodyBytes
          + " bytes accepted (maxBodyBytes); nothing was applied");
      return;
    }
    Map<String, String> headers = HttpMessage.headersOf(request);
    SignatureCheck check = signature.verify(headers::get, body, clock.instant());
    if (!check.isValid()) {
      reject(response, problemOf(Objects.requireNonNull(check.failure())), check.detail()
          + "; nothing was applied");
      return;
    }
    if (JsonCheck.isJson(request.getContentType())) {
      String problem = JsonCheck.problem(body);
      if (problem != null) {
        reject(response, Problems.MALFORMED_JSON, "the body is declared " + request.getContentType()
            + " but is not valid JSON: " + problem + "; nothing was applied");
        return;
      }
    }
    BufferedRequest buffered = new BufferedRequest(request, body);
    KeyExtraction extraction = extract(new BodyView(consumerGroup, buffered, body));
    if (extraction instanceof KeyExtraction.Absent absent) {
      reject(response, Problems.MISSING_KEY, "no event id: " + absent.detail() + " (" + keys
          + "); nothing was applied");
      return;
    }
    if (extraction instanceof KeyExtraction.Rejected rejected) {
      reject(response, Problems.INVALID_KEY, "the event id is not usable: " + rejected.reason()
          + "; nothing was applied");
      return;
    }
    KeyExtraction.Found found = (KeyExtraction.Found) extraction;
    String problem = IdempotencyKey.problemWith(found.value());
    if (problem != null) {
      reject(response, Problems.INVALID_KEY, found.origin() + ": " + problem + "; nothing was applied");
      return;
    }
    Delivery exchange = new Delivery(new WebhookEvent(found.value(), headers, body, buffered));
    HttpMessage message = new HttpMessage(consumerGroup, buffered, body, found.value(),
        found.source(), found.origin(), exchange);
    answer(pipeline.process(message), exchange, found.value(), response);
  }

  private KeyExtraction extract(BodyView view) {
    try {
      KeyExtraction extraction = keys.extract(view);
      return extraction != null ? extraction : KeyExtraction.rejected("the key extractor returned null");
    } catch (RuntimeException e) {
      return KeyExtraction.rejected("the key extractor threw " + e);
    }
  }

  private void answer(ProcessingOutcome outcome, Delivery exchange, String id, HttpServletResponse response)
      throws IOException {
    switch (outcome) {
      case PROCESSED -> ok(response, "processed", id);
      case DUPLICATE -> ok(response, "duplicate", id);
      case CONFLICT -> reject(response, Problems.KEY_REUSED, "event id '" + id + "' was already"
          + " processed with a different body; not applied");
      case RETRY_TRANSACTION -> Problems.write(response, exchange.claimTimedOut() ? Problems.IN_FLIGHT
          : Problems.UNAVAILABLE, exchange.claimTimedOut()
              ? "event id '" + id + "' is being processed by another delivery; retry later"
              : "the database asked for the transaction to be retried; nothing was applied",
          Duration.ofSeconds(1));
      case RETRY_STORE_UNAVAILABLE, RELEASED -> Problems.write(response, Problems.UNAVAILABLE,
          "the database could not be reached (or the receiver is stopping); nothing was applied",
          exchange.retryDelay() == null || exchange.retryDelay().isZero() ? Duration.ofSeconds(1)
              : exchange.retryDelay());
      case RETRY, DEAD_LETTERED -> {
        DeadLetterReason reason = exchange.deadLetter();
        if (reason != null && (reason.cause() == DeadLetterCause.NO_KEY
            || reason.cause() == DeadLetterCause.INVALID_KEY)) {
          reject(response, Problems.INVALID_KEY, reason.detail() + "; nothing was applied");
          return;
        }
        Throwable failure = exchange.handlerFailure();
        Duration retryAfter = outcome == ProcessingOutcome.RETRY ? exchange.retryDelay() : null;
        Problems.write(response, Problems.HANDLER_FAILED, "event id '" + id + "' failed and was"
            + " rolled back (" + (failure == null ? "unknown failure" : failure.getClass().getSimpleName()
            + ": " + failure.getMessage()) + "); nothing was applied, redeliver it", retryAfter);
      }
    }
  }

  private static void ok(HttpServletResponse response, String status, String id) throws IOException {
    byte[] body = ("{\"status\":\"" + status + "\",\"id\":" + jsonString(id) + "}")
        .getBytes(StandardCharsets.UTF_8);
    response.setStatus(200);
    response.setContentType("application/json");
    response.setContentLength(body.length);
    response.getOutputStream().write(body);
  }

  private static String jsonString(String text) {
    try {
      return JSON.writeValueAsString(text);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Problems.Problem problemOf(SignatureCheck.Failure failure) {
    return switch (failure) {
      case MISSING -> Problems.SIGNATURE_MISSING;
      case MALFORMED -> Problems.SIGNATURE_MALFORMED;
      case UNKNOWN_SCHEME -> Problems.SIGNATURE_SCHEME;
      case MISMATCH -> Problems.SIGNATURE_MISMATCH;
      case STALE -> Problems.SIGNATURE_STALE;
    };
  }

  private static void reject(HttpServletResponse response, Problems.Problem problem, String detail)
      throws IOException {
    LOG.debug("{} {}: {}", problem.status(), problem.name(), detail);
    Problems.write(response, problem, detail, null);
  }

  /** This receiver as a servlet (map it to the webhook's path; it answers every method alike). */
  public HttpServlet servlet() {
    return new HttpServlet() {
      private static final long serialVersionUID = 1L;

      @Override
      protected void service(HttpServletRequest request, HttpServletResponse response)
          throws ServletException, IOException {
        serve(request, response);
      }
    };
  }

  @Override
  public String toString() {
    return "WebhookEndpoint[group=" + consumerGroup + ", " + signature + ", key=" + keys + "]";
  }

  /** One delivery: the handler in the claiming transaction. */
  private final class Delivery extends Exchange<C> {
    private final WebhookEvent event;

    Delivery(WebhookEvent event) {
      this.event = event;
    }

    @Override
    protected void inTransaction(IdempotencyKey key, C transaction) throws Exception {
      handler.handle(event, transaction);
    }
  }

  /** Builder of {@link WebhookEndpoint}; {@link #build()} validates. */
  public static final class Builder<C> {
    private final ProcessedEventStore<C> store;
    private @Nullable String consumerGroup;
    private @Nullable WebhookSignature signature;
    private @Nullable IdempotencyKeyExtractor keys;
    private @Nullable WebhookHandler<C> handler;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private RetryPolicy retryPolicy = RetryPolicy.ofDefaults();
    private boolean detectPayloadConflicts = true;
    private Clock clock = Clock.systemUTC();
    private final List<IdempotencyListener> listeners = new ArrayList<>();

    private Builder(ProcessedEventStore<C> store) {
      this.store = Objects.requireNonNull(store, "store");
    }

    /** Required: the namespace of the sender's event ids, for example {@code "stripe"}. */
    public Builder<C> consumerGroup(String value) {
      this.consumerGroup = Objects.requireNonNull(value, "consumerGroup");
      return this;
    }

    /** Required: how the sender signs ({@link WebhookSignature#stripe}, {@code github}, {@code standardWebhooks}). */
    public Builder<C> signature(WebhookSignature value) {
      this.signature = Objects.requireNonNull(value, "signature");
      return this;
    }

    /**
     * Default: the signature scheme's ({@link WebhookSignature#defaultKeyExtractor()}). Any of
     * core's extractors, over the body (a JSON pointer) and the headers (any case).
     */
    public Builder<C> keyExtractor(IdempotencyKeyExtractor value) {
      this.keys = Objects.requireNonNull(value, "keyExtractor");
      return this;
    }

    /** Required: the business logic. */
    public Builder<C> handler(WebhookHandler<C> value) {
      this.handler = Objects.requireNonNull(value, "handler");
      return this;
    }

    /** Default {@link WebhookEndpoint#DEFAULT_MAX_BODY_BYTES} (1 MiB); at least 1. */
    public Builder<C> maxBodyBytes(int value) {
      this.maxBodyBytes = value;
      return this;
    }

    /**
     * Default {@link RetryPolicy#ofDefaults()}: every delivery is attempt 1 (the sender counts its
     * own redeliveries), so the policy decides whether a failure is retryable and the {@code
     * Retry-After} of a retryable one.
     */
    public Builder<C> retryPolicy(RetryPolicy value) {
      this.retryPolicy = Objects.requireNonNull(value, "retryPolicy");
      return this;
    }

    /**
     * Default {@code true}: the same event id with another body is answered 422 (not applied).
     * {@code false} answers it as a duplicate, for senders whose redeliveries change the body.
     */
    public Builder<C> detectPayloadConflicts(boolean value) {
      this.detectPayloadConflicts = value;
      return this;
    }

    /** Default the system clock (UTC): what signed timestamps are checked against. */
    public Builder<C> clock(Clock value) {
      this.clock = Objects.requireNonNull(value, "clock");
      return this;
    }

    /** Adds a pipeline listener (metrics, logs, the crash tests' fault injection). */
    public Builder<C> listener(IdempotencyListener value) {
      this.listeners.add(Objects.requireNonNull(value, "listener"));
      return this;
    }

    /**
     * @throws IllegalStateException when the consumer group, signature or handler is missing
     * @throws IllegalArgumentException when a limit or the consumer group is invalid
     */
    public WebhookEndpoint<C> build() {
      if (consumerGroup == null) {
        throw new IllegalStateException("consumerGroup must be set, but was not");
      }
      if (signature == null) {
        throw new IllegalStateException("signature must be set, but was not: a webhook receiver"
            + " verifies its sender (WebhookSignature.stripe, github, standardWebhooks)");
      }
      if (handler == null) {
        throw new IllegalStateException("handler must be set, but was not");
      }
      Settings.inRange("maxBodyBytes", maxBodyBytes, 1, Integer.MAX_VALUE - 1);
      return new WebhookEndpoint<>(this, signature, handler);
    }
  }
}
