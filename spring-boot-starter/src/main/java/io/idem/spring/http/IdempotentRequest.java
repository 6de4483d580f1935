package io.idem.spring.http;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a Spring MVC controller method an Idempotency-Key endpoint (idem-http's {@code
 * IdempotencyKeyEndpoint}, docs/HTTP.md): the key is claimed in the same transaction — opened by
 * Idem through the application's transaction manager — as the method's {@code JdbcTemplate} / JPA
 * writes and the stored response; the client hears the answer only after the commit; a repeat gets
 * the stored answer byte for byte (with {@code Idempotent-Replayed: true}), a repeat while the
 * first is in flight 409, the same key for another request 422, a missing key 400.
 *
 * <p>What the method throws rolls everything back and is handled by Spring as usual ({@code
 * @ExceptionHandler}, {@code ResponseStatusException}); nothing is stored, so a retry runs the
 * method again. A 5xx answer is a failure too (rolled back, not stored). The method must write its
 * answer as the body ({@code @ResponseBody}, {@code @RestController}, {@code ResponseEntity}):
 * a view rendered after the method returned would be outside the transaction, so start-up refuses
 * such a method.
 *
 * <p>Not {@code @Idempotent}, which marks broker listeners.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotentRequest {

  /**
   * The consumer group of the keys (their namespace); default {@code idem.http.consumer-group}
   * ({@value IdemHttpProperties#DEFAULT_CONSUMER_GROUP}). Methods sharing one share keys.
   */
  String consumerGroup() default "";

  /**
   * Default {@code true}: a request without {@code Idempotency-Key} is answered 400. {@code false}
   * runs it in a plain transaction, nothing stored.
   */
  boolean keyRequired() default true;
}
