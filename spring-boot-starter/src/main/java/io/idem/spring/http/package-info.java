/**
 * Idem's HTTP support ({@code idem-http}) in a Spring MVC application: {@link
 * io.idem.spring.http.IdempotentRequest} on controller methods (the {@code Idempotency-Key}
 * header, the first response stored in the business transaction and replayed), webhook receivers
 * from {@code idem.http.webhooks.*}, and {@link io.idem.spring.http.IdemHttp} to build either in
 * code. docs/SPRING-BOOT.md, "HTTP".
 */
@NullMarked
package io.idem.spring.http;

import org.jspecify.annotations.NullMarked;
