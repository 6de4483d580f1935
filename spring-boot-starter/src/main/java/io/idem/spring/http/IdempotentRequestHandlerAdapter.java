package io.idem.spring.http;

import io.idem.http.IdempotencyKeyEndpoint;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.Ordered;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerAdapter;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;

/**
 * Runs {@link IdempotentRequest} controller methods through idem-http's {@link
 * IdempotencyKeyEndpoint}: the {@link DispatcherServlet DispatcherServlet} picks this adapter
 * first (highest precedence) for those methods only, and it hands the invocation — argument
 * resolution, the method, the message converters writing the body — to Spring's own {@link
 * RequestMappingHandlerAdapter} inside the key's transaction, on a held response that is sent (and
 * stored) after the commit. What the method throws is rethrown after the rollback, for Spring's
 * exception handling. One endpoint per method, built on first use. Thread-safe.
 *
 * @see org.springframework.web.servlet.DispatcherServlet
 */
final class IdempotentRequestHandlerAdapter implements HandlerAdapter, Ordered {
  private final IdemHttp http;
  private final ObjectProvider<RequestMappingHandlerAdapter> delegate;
  private final Map<Method, IdempotencyKeyEndpoint<SqlSession>> endpoints = new ConcurrentHashMap<>();

  IdempotentRequestHandlerAdapter(IdemHttp http, ObjectProvider<RequestMappingHandlerAdapter> delegate) {
    this.http = http;
    this.delegate = delegate;
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  public boolean supports(Object handler) {
    return handler instanceof HandlerMethod method && method.hasMethodAnnotation(IdempotentRequest.class);
  }

  @Override
  public @Nullable ModelAndView handle(HttpServletRequest request, HttpServletResponse response, Object handler)
      throws Exception {
    HandlerMethod method = (HandlerMethod) handler;
    IdempotencyKeyEndpoint<SqlSession> endpoint = endpoints.computeIfAbsent(method.getMethod(), m -> {
      IdempotentRequest annotation = method.getMethodAnnotation(IdempotentRequest.class);
      return http.idempotencyKeyEndpoint(annotation == null ? null : annotation.consumerGroup())
          .keyRequired(annotation == null || annotation.keyRequired())
          .rethrowHandlerFailures(true)
          .build();
    });
    RequestMappingHandlerAdapter mvc = delegate.getObject();
    endpoint.serve(request, response, (heldRequest, heldResponse, transaction) -> {
      ModelAndView view = mvc.handle(heldRequest, heldResponse, handler);
      if (view != null && view.hasView()) {
        throw new IllegalStateException("@IdempotentRequest method " + method
            + " returned a view: its answer must be the response body (@ResponseBody, ResponseEntity)");
      }
    });
    return null;
  }

  /** Spring Framework 6 (Boot 3.5) declares it; 7 removed it. */
  public long getLastModified(HttpServletRequest request, Object handler) {
    return -1;
  }
}
