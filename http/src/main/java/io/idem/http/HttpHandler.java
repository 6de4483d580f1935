package io.idem.http;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * The business logic of an Idempotency-Key endpoint, run in the transaction that claimed the key:
 * it reads the request (its body can be read again), writes its business rows through {@code
 * transaction}, and writes its answer into {@code response} as a servlet would. The answer is held
 * until the transaction committed, then sent — and stored, so that a repeat of the key gets it
 * byte for byte (docs/HTTP.md).
 *
 * <p>What is a result and what is a failure: an answer of status 100–499 is a result (committed
 * with the business writes, stored, replayed); throwing, or answering 500–599, is a failure (rolled
 * back, nothing stored: a retry with the same key runs the handler again).
 *
 * @param <C> the store's transaction context ({@code SqlSession} for store-jdbc)
 */
@FunctionalInterface
public interface HttpHandler<C> {
  void handle(HttpServletRequest request, HttpServletResponse response, C transaction) throws Exception;
}
