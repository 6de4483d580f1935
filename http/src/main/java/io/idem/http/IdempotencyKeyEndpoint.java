package io.idem.http;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.KeySource;
import io.idem.NonRetryableException;
import io.idem.OversizedKeyPolicy;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import io.idem.StoreUnavailableException;
import io.idem.TransactionRetryException;
import io.idem.http.internal.BufferedRequest;
import io.idem.http.internal.CapturingResponse;
import io.idem.http.internal.Exchange;
import io.idem.http.internal.HttpMessage;
import io.idem.http.internal.HttpPipeline;
import io.idem.http.internal.JsonCheck;
import io.idem.http.internal.KeyHeader;
import io.idem.http.internal.Problems;
import io.idem.http.internal.RequestBodies;
import io.idem.http.internal.SqlFailures;
import io.idem.http.spi.StoredResponse;
import io.idem.http.spi.StoredResponses;
import io.idem.spi.ProcessedEventStore;
import io.idem.spi.Settings;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An endpoint that honours the {@code Idempotency-Key} request header (IETF httpapi draft "The
 * Idempotency-Key HTTP Header Field") with Idem's guarantee: the key is claimed in the
 * processed-events table in the same transaction as the handler's business writes and the stored
 * first response, and the client hears the answer only after that transaction committed. Per
 * request (docs/HTTP.md has the full table):
 *
 * <ul>
 *   <li>key missing: 400 problem+json when {@link Builder#keyRequired required} (the default),
 *       else the handler runs in a plain transaction and nothing is stored;
 *   <li>new key: the handler runs in the claiming transaction; its answer (status 100–499) is
 *       stored with the chosen headers and the body, committed, then sent;
 *   <li>same key, same request (method, request target and body: the fingerprint): the stored
 *       answer, byte for byte, with {@code Idempotent-Replayed: true};
 *   <li>same key while the first request is still in its transaction: 409 at once — with a store
 *       whose claim lock timeout is {@link JdbcStoredResponses#IN_FLIGHT_CLAIM_LOCK_TIMEOUT};
 *   <li>same key, another request: 422;
 *   <li>the handler threw or answered 5xx: rolled back, nothing stored, 500 (or its own 5xx): a
 *       retry with the same key runs the handler again;
 *   <li>the database unavailable: 503 with {@code Retry-After}.
 * </ul>
 *
 * <p>Keys are scoped per client ({@link ClientResolver}): one client's key never reaches another
 * client's stored response. Bad input (a malformed, repeated or too long key, a body over {@link
 * Builder#maxBodyBytes}, malformed JSON under a JSON content type, no client identity) is answered
 * with a 4xx problem before anything is claimed or written.
 *
 * <p>Thread-safe: one endpoint serves every request thread.
 *
 * @param <C> the store's transaction context
 */
public final class IdempotencyKeyEndpoint<C> {
  private static final Logger LOG = LoggerFactory.getLogger(IdempotencyKeyEndpoint.class);

  /** The request header: {@value}. */
  public static final String KEY_HEADER = "Idempotency-Key";
  /** The header a replayed answer carries: {@value} (as Stripe names it). */
  public static final String REPLAYED_HEADER = "Idempotent-Replayed";
  /**
   * The request attribute under which {@link #filter()} hands the transaction context to the
   * servlet behind it: {@value}.
   */
  public static final String TRANSACTION_ATTRIBUTE = "io.idem.http.transaction";

  /** Default {@link Builder#consumerGroup}: {@value}. */
  public static final String DEFAULT_CONSUMER_GROUP = "http";
  /** Default {@link Builder#maxKeyLength}: {@value} characters (Stripe's limit). */
  public static final int DEFAULT_MAX_KEY_LENGTH = 255;
  /** Default {@link Builder#maxBodyBytes}: 1 MiB. */
  public static final int DEFAULT_MAX_BODY_BYTES = 1 << 20;
  /** Default {@link Builder#maxResponseBytes}: 1 MiB. */
  public static final int DEFAULT_MAX_RESPONSE_BYTES = 1 << 20;
  /** Default {@link Builder#storedHeaders}: the headers that describe the representation. */
  public static final Set<String> DEFAULT_STORED_HEADERS = Set.of("Content-Type", "Content-Language",
      "Content-Location", "Location", "ETag", "Last-Modified", "Cache-Control");

  private final ProcessedEventStore<C> store;
  private final StoredResponses<C> responses;
  private final HttpPipeline<C> pipeline;
  private final String consumerGroup;
  private final boolean keyRequired;
  private final ClientResolver clients;
  private final int maxKeyLength;
  private final int maxBodyBytes;
  private final int maxResponseBytes;
  private final Set<String> storedHeaders;
  private final boolean validateJson;
  private final boolean rethrowHandlerFailures;

  private IdempotencyKeyEndpoint(Builder<C> b) {
    this.store = b.store;
    this.responses = b.responses;
    this.consumerGroup = b.consumerGroup;
    this.keyRequired = b.keyRequired;
    this.clients = b.clients;
    this.maxKeyLength = b.maxKeyLength;
    this.maxBodyBytes = b.maxBodyBytes;
    this.maxResponseBytes = b.maxResponseBytes;
    Set<String> lower = new LinkedHashSet<>();
    b.storedHeaders.forEach(h -> lower.add(h.toLowerCase(Locale.ROOT)));
    this.storedHeaders = Collections.unmodifiableSet(lower);
    this.validateJson = b.validateJson;
    this.rethrowHandlerFailures = b.rethrowHandlerFailures;
    // a client-scoped key may pass 512 characters: stored as sha256:<hex>, never truncated
    this.pipeline = new HttpPipeline<>(store, consumerGroup, b.retryPolicy, true,
        OversizedKeyPolicy.HASH, b.listeners);
  }

  /**
   * Starts an endpoint on {@code store} (for store-jdbc built with {@link
   * JdbcStoredResponses#processedEventStore}) and {@code responses} (a {@link JdbcStoredResponses}
   * on the same database).
   */
  public static <C> Builder<C> builder(ProcessedEventStore<C> store, StoredResponses<C> responses) {
    return new Builder<>(store, responses);
  }

  /** The consumer group of this endpoint's keys. */
  public String consumerGroup() {
    return consumerGroup;
  }

  /**
   * Serves one request: reads and checks it, runs {@code handler} under the key's claim, and
   * answers after the transaction ended (the table in the class documentation).
   *
   * @throws Exception only with {@link Builder#rethrowHandlerFailures(boolean)}: what the handler
   *     threw, after the rollback, for the caller (a framework) to answer; otherwise I/O errors of
   *     the response only
   */
  public void serve(HttpServletRequest request, HttpServletResponse response, HttpHandler<C> handler)
      throws Exception {
    Objects.requireNonNull(handler, "handler");
    byte[] body = RequestBodies.read(request, maxBodyBytes);
    if (body == null) {
      reject(response, Problems.BODY_TOO_LARGE, "the request body is larger than the " + maxBodyBytes
          + " bytes accepted (maxBodyBytes); nothing was applied");
      return;
    }
    KeyHeader.Parsed parsed = KeyHeader.parse(Collections.list(request.getHeaders(KEY_HEADER)), maxKeyLength);
    if (parsed.problem() != null) {
      reject(response, Problems.INVALID_KEY, parsed.problem() + "; nothing was applied");
      return;
    }
    if (validateJson && JsonCheck.isJson(request.getContentType())) {
      String problem = JsonCheck.problem(body);
      if (problem != null) {
        reject(response, Problems.MALFORMED_JSON, "the body is declared " + request.getContentType()
            + " but is not valid JSON: " + problem + "; nothing was applied");
        return;
      }
    }
    BufferedRequest buffered = new BufferedRequest(request, body);
    String key = parsed.key();
    if (key == null) {
      if (keyRequired) {
        reject(response, Problems.MISSING_KEY, "this endpoint requires an " + KEY_HEADER
            + " header (a unique value per operation, the same on every retry of it); nothing was applied");
      } else {
        serveWithoutKey(buffered, response, handler);
      }
      return;
    }
    String client = clients.clientOf(request);
    if (client == null || client.isEmpty() || IdempotencyKey.problemWithContent(client) != null) {
      reject(response, Problems.NO_CLIENT, "the request has no client identity (" + clients
          + ") to scope its idempotency key with; nothing was applied");
      return;
    }
    KeyedRequest exchange = new KeyedRequest(buffered, response, handler);
    HttpMessage message = new HttpMessage(consumerGroup, buffered, body, scoped(client, key),
        KeySource.HEADER, "header '" + KEY_HEADER + "' of client '" + client + "'", exchange);
    ProcessingOutcome outcome = pipeline.process(message);
    answer(outcome, exchange, message, response);
  }

  /** {@code client} with {@code %} and {@code :} escaped, a {@code :}, then the key. */
  static String scoped(String client, String key) {
    return client.replace("%", "%25").replace(":", "%3A") + ":" + key;
  }

  private void answer(ProcessingOutcome outcome, KeyedRequest exchange, HttpMessage message,
      HttpServletResponse response) throws Exception {
    IdempotencyKey claimed = exchange.key();
    IdempotencyKey key = claimed != null ? claimed : new IdempotencyKey(consumerGroup,
        message.key().length() <= IdempotencyKey.MAX_LENGTH ? message.key() : "unkeyed", KeySource.HEADER);
    switch (outcome) {
      case PROCESSED -> exchange.capture.writeTo(response);
      case DUPLICATE -> replay(key, message, response);
      case CONFLICT -> reject(response, Problems.KEY_REUSED, "the " + KEY_HEADER + " was already used"
          + " for a different request (method, target or body differ); nothing was applied");
      case RETRY_TRANSACTION -> {
        if (exchange.claimTimedOut()) {
          Problems.write(response, Problems.IN_FLIGHT, "a request with this " + KEY_HEADER
              + " is still being processed; retry after it completed", Duration.ofSeconds(1));
        } else {
          Problems.write(response, Problems.UNAVAILABLE, "the database asked for the transaction to"
              + " be retried; nothing was applied", Duration.ofSeconds(1));
        }
      }
      case RETRY_STORE_UNAVAILABLE, RELEASED -> Problems.write(response, Problems.UNAVAILABLE,
          "the database could not be reached (or the server is stopping); nothing was applied",
          orOne(exchange.retryDelay()));
      case RETRY, DEAD_LETTERED -> failed(exchange, outcome, response);
    }
  }

  private void replay(IdempotencyKey key, HttpMessage message, HttpServletResponse response)
      throws IOException {
    StoredResponse stored;
    try {
      stored = responses.find(key);
    } catch (StoreUnavailableException e) {
      Problems.write(response, Problems.UNAVAILABLE, "the stored response could not be read: "
          + e.getMessage(), Duration.ofSeconds(1));
      return;
    }
    if (stored == null) {
      LOG.error("key '{}' of {} is processed but has no stored response in {} (was it processed by"
          + " another kind of consumer with the same consumer group?)", key.value(), consumerGroup, responses);
      Problems.write(response, Problems.RESPONSE_MISSING, "the request with this " + KEY_HEADER
          + " was processed, but its response is not stored and cannot be replayed", null);
      return;
    }
    LOG.debug("key '{}' of {}: stored response replayed", message.key(), consumerGroup);
    CapturingResponse.replay(stored, response, REPLAYED_HEADER, "true");
  }

  private void failed(KeyedRequest exchange, ProcessingOutcome outcome, HttpServletResponse response)
      throws Exception {
    DeadLetterReason reason = exchange.deadLetter();
    if (reason != null && (reason.cause() == DeadLetterCause.NO_KEY
        || reason.cause() == DeadLetterCause.INVALID_KEY)) {
      reject(response, Problems.INVALID_KEY, reason.detail() + "; nothing was applied");
      return;
    }
    Throwable failure = exchange.handlerFailure();
    if (failure instanceof AnsweredFailure) {
      exchange.capture.writeTo(response); // the handler's own 5xx, as it wrote it (not stored)
      return;
    }
    if (rethrowHandlerFailures && failure instanceof Exception e
        && !(failure instanceof CapturingResponse.ResponseTooLargeException)) {
      throw e;
    }
    if (rethrowHandlerFailures && failure instanceof Error e) {
      throw e;
    }
    Duration retryAfter = outcome == ProcessingOutcome.RETRY ? orOne(exchange.retryDelay()) : null;
    // not the handler's: its transaction failed after it, at the commit (the stored response's
    // INSERT travels in the COMMIT's round trip)
    String what = failure != null ? failure.getClass().getSimpleName() + ": " + failure.getMessage()
        : exchange.retryFailure() != null ? exchange.retryFailure().getClass().getSimpleName() + ": "
            + exchange.retryFailure().getMessage()
        : reason != null ? reason.detail() : "unknown failure";
    Problems.write(response, Problems.HANDLER_FAILED, "the request failed and was rolled back ("
        + what
        // a handler's own SQL COMMIT (store-jdbc's failure says so) committed what it wrote before
        + (what.contains("stays committed") ? "); nothing else was applied, nothing stored" : "); nothing was applied or stored")
        + (retryAfter != null ? ", retry with the same " + KEY_HEADER : ""), retryAfter);
  }

  @SuppressWarnings("NullAway") // the TransactionWork<Void> lambda returns null
  private void serveWithoutKey(BufferedRequest request, HttpServletResponse response, HttpHandler<C> handler)
      throws Exception {
    CapturingResponse capture = new CapturingResponse(response, maxResponseBytes);
    try {
      store.inTransaction(transaction -> {
        capture.clear();
        handler.handle(request, capture, transaction);
        if (capture.getStatus() >= 500) {
          throw new AnsweredFailure(capture.getStatus());
        }
        capture.body(); // over the limit: fail before the commit
        return null;
      });
    } catch (AnsweredFailure e) {
      capture.writeTo(response);
      return;
    } catch (StoreUnavailableException | TransactionRetryException e) {
      Problems.write(response, Problems.UNAVAILABLE, e.getMessage() + "; nothing was applied",
          Duration.ofSeconds(1));
      return;
    } catch (Exception e) {
      if (rethrowHandlerFailures && !(e instanceof CapturingResponse.ResponseTooLargeException)) {
        throw e;
      }
      LOG.warn("request without {} to {} failed and was rolled back: {}", KEY_HEADER, consumerGroup,
          SqlFailures.rootMessage(e));
      Problems.write(response, Problems.HANDLER_FAILED, "the request failed and was rolled back ("
          + e.getClass().getSimpleName() + ": " + e.getMessage() + "); nothing was applied", null);
      return;
    }
    capture.writeTo(response);
  }

  private static Duration orOne(@Nullable Duration delay) {
    return delay == null || delay.isZero() ? Duration.ofSeconds(1) : delay;
  }

  private static void reject(HttpServletResponse response, Problems.Problem problem, String detail)
      throws IOException {
    LOG.debug("{} {}: {}", problem.status(), problem.name(), detail);
    Problems.write(response, problem, detail, null);
  }

  /**
   * This endpoint as a servlet running {@code handler}. Its {@code service} answers every method;
   * map it to the paths (and methods) that should be idempotent.
   */
  public HttpServlet servlet(HttpHandler<C> handler) {
    Objects.requireNonNull(handler, "handler");
    return new HttpServlet() {
      private static final long serialVersionUID = 1L;

      @Override
      protected void service(HttpServletRequest request, HttpServletResponse response)
          throws ServletException, IOException {
        try {
          serve(request, response, handler);
        } catch (IOException | ServletException | RuntimeException e) {
          throw e;
        } catch (Exception e) {
          throw new ServletException(e);
        }
      }
    };
  }

  /**
   * This endpoint as a filter in front of an existing servlet: the servlet behind it runs in the
   * claiming transaction, finds the transaction context in the request attribute {@link
   * #TRANSACTION_ATTRIBUTE} ({@link #transaction}), and its answer is held, stored and replayed
   * as a {@link HttpHandler}'s.
   */
  public Filter filter() {
    return new Filter() {
      @Override
      public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
          throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest http) || !(response instanceof HttpServletResponse out)) {
          chain.doFilter(request, response);
          return;
        }
        try {
          serve(http, out, (rq, rs, transaction) -> {
            rq.setAttribute(TRANSACTION_ATTRIBUTE, transaction);
            try {
              chain.doFilter(rq, rs);
            } finally {
              rq.removeAttribute(TRANSACTION_ATTRIBUTE);
            }
          });
        } catch (IOException | ServletException | RuntimeException e) {
          throw e;
        } catch (Exception e) {
          throw new ServletException(e);
        }
      }
    };
  }

  /**
   * The transaction context {@link #filter()} put on the request, for the servlet behind it.
   *
   * @throws IllegalStateException when the request is not inside an idempotent request's transaction
   */
  public static <C> C transaction(HttpServletRequest request, Class<C> type) {
    Object transaction = request.getAttribute(TRANSACTION_ATTRIBUTE);
    if (transaction == null) {
      throw new IllegalStateException("no Idem transaction on this request: is the servlet behind"
          + " IdempotencyKeyEndpoint.filter(), and does the request carry an " + KEY_HEADER + "?");
    }
    return type.cast(transaction);
  }

  @Override
  public String toString() {
    return "IdempotencyKeyEndpoint[group=" + consumerGroup + ", keyRequired=" + keyRequired
        + ", clients=" + clients + ", store=" + store + ", responses=" + responses + "]";
  }

  /** A handler that answered 5xx: a failure (rolled back), its answer passed on, not stored. */
  private static final class AnsweredFailure extends Exception {
    private static final long serialVersionUID = 1L;

    AnsweredFailure(int status) {
      super("the handler answered " + status + " (a failure: rolled back, not stored)", null, false, false);
    }
  }

  /** One keyed request: the work in the claiming transaction, and what it wrote. */
  private final class KeyedRequest extends Exchange<C> {
    private final BufferedRequest request;
    private final CapturingResponse capture;
    private final HttpHandler<C> handler;

    KeyedRequest(BufferedRequest request, HttpServletResponse response, HttpHandler<C> handler) {
      this.request = request;
      this.capture = new CapturingResponse(response, maxResponseBytes);
      this.handler = handler;
    }

    @Override
    protected void inTransaction(IdempotencyKey key, C transaction) throws Exception {
      responses.beforeHandler(transaction);
      capture.clear();
      StoredResponse stored;
      try {
        handler.handle(request, capture, transaction);
        if (capture.getStatus() >= 500) {
          throw new AnsweredFailure(capture.getStatus());
        }
        stored = capture.toStored(storedHeaders);
      } catch (Exception e) {
        if (capture.overflowed()) { // whatever the handler made of it: the same request fails again
          throw new NonRetryableException(CapturingResponse.ResponseTooLargeException.message(maxResponseBytes), e);
        }
        throw e;
      }
      responses.save(transaction, key, stored);
    }
  }

  /** Builder of {@link IdempotencyKeyEndpoint}; {@link #build()} validates and copies. */
  public static final class Builder<C> {
    private final ProcessedEventStore<C> store;
    private final StoredResponses<C> responses;
    private String consumerGroup = DEFAULT_CONSUMER_GROUP;
    private boolean keyRequired = true;
    private ClientResolver clients = ClientResolver.principal();
    private int maxKeyLength = DEFAULT_MAX_KEY_LENGTH;
    private int maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
    private int maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
    private Collection<String> storedHeaders = DEFAULT_STORED_HEADERS;
    private boolean validateJson = true;
    private boolean rethrowHandlerFailures;
    private RetryPolicy retryPolicy = RetryPolicy.ofDefaults();
    private final List<IdempotencyListener> listeners = new ArrayList<>();

    private Builder(ProcessedEventStore<C> store, StoredResponses<C> responses) {
      this.store = Objects.requireNonNull(store, "store");
      this.responses = Objects.requireNonNull(responses, "responses");
    }

    /**
     * Default {@value IdempotencyKeyEndpoint#DEFAULT_CONSUMER_GROUP}. The namespace of the keys:
     * endpoints sharing it share keys (a key reused on another path is a 422, since the path is in
     * the fingerprint); give an endpoint its own to make its keys independent.
     */
    public Builder<C> consumerGroup(String value) {
      this.consumerGroup = Objects.requireNonNull(value, "consumerGroup");
      return this;
    }

    /**
     * Default {@code true}: a request without the header is answered 400. {@code false} runs it
     * in a plain transaction (no claim, nothing stored, a retry applies it again).
     */
    public Builder<C> keyRequired(boolean value) {
      this.keyRequired = value;
      return this;
    }

    /** Default {@link ClientResolver#principal()}. */
    public Builder<C> clientResolver(ClientResolver value) {
      this.clients = Objects.requireNonNull(value, "clientResolver");
      return this;
    }

    /** Default {@value IdempotencyKeyEndpoint#DEFAULT_MAX_KEY_LENGTH}; 1 to 512 characters. */
    public Builder<C> maxKeyLength(int value) {
      this.maxKeyLength = value;
      return this;
    }

    /** Default {@link IdempotencyKeyEndpoint#DEFAULT_MAX_BODY_BYTES} (1 MiB); at least 1. */
    public Builder<C> maxBodyBytes(int value) {
      this.maxBodyBytes = value;
      return this;
    }

    /**
     * Default {@link IdempotencyKeyEndpoint#DEFAULT_MAX_RESPONSE_BYTES} (1 MiB); at least 1. The
     * response is held in memory and stored whole: a handler writing more fails (rolled back, 500).
     */
    public Builder<C> maxResponseBytes(int value) {
      this.maxResponseBytes = value;
      return this;
    }

    /**
     * Default {@link IdempotencyKeyEndpoint#DEFAULT_STORED_HEADERS}: the response headers stored and
     * replayed (any case). Others (cookies, per-request ids, {@code Date}) reach the first answer
     * only.
     */
    public Builder<C> storedHeaders(Collection<String> value) {
      this.storedHeaders = List.copyOf(value);
      return this;
    }

    /** Default {@code true}: a body under a JSON content type must be valid JSON (else 400). */
    public Builder<C> validateJson(boolean value) {
      this.validateJson = value;
      return this;
    }

    /**
     * Default {@code false}: a handler's exception is answered 500 problem+json. {@code true}
     * rethrows it from {@link IdempotencyKeyEndpoint#serve} after the rollback, for a framework
     * that maps exceptions to answers (Spring MVC's exception handlers).
     */
    public Builder<C> rethrowHandlerFailures(boolean value) {
      this.rethrowHandlerFailures = value;
      return this;
    }

    /**
     * Default {@link RetryPolicy#ofDefaults()}. Every request is attempt 1 (the client's retries
     * are new requests), so the policy decides only whether a failure is retryable and the {@code
     * Retry-After} of a retryable one (its initial backoff); {@code maxAttempts(1)} or a
     * non-retryable failure answers 500 without {@code Retry-After}. Neither leaves the key used.
     */
    public Builder<C> retryPolicy(RetryPolicy value) {
      this.retryPolicy = Objects.requireNonNull(value, "retryPolicy");
      return this;
    }

    /** Adds a pipeline listener (metrics, logs, the crash tests' fault injection). */
    public Builder<C> listener(IdempotencyListener value) {
      this.listeners.add(Objects.requireNonNull(value, "listener"));
      return this;
    }

    /**
     * @throws IllegalArgumentException when a limit is out of range or the consumer group invalid
     * @throws IllegalStateException when the responses are a {@link JdbcStoredResponses} on another
     *     processed-events table than the store's (a response is stored in its key's marker)
     */
    public IdempotencyKeyEndpoint<C> build() {
      if (store instanceof MyBatisProcessedEventStore myBatis
          && responses instanceof JdbcStoredResponses jdbc
          && !jdbc.processedEventsTableName().equals(myBatis.tableName())) {
        throw new IllegalStateException("the stored responses are on processed-events table "
            + jdbc.processedEventsTableName() + " but the store's is " + myBatis.tableName()
            + ": a response is stored in its key's marker (JdbcStoredResponses.Builder#processedEventsTable)");
      }
      Settings.inRange("maxKeyLength", maxKeyLength, 1, IdempotencyKey.MAX_LENGTH);
      Settings.inRange("maxBodyBytes", maxBodyBytes, 1, Integer.MAX_VALUE - 1);
      Settings.atLeast("maxResponseBytes", maxResponseBytes, 1);
      return new IdempotencyKeyEndpoint<>(this);
    }
  }
}
