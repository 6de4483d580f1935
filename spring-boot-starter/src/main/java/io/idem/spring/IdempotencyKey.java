package io.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the parameter of an {@link Idempotent} listener method whose value is the message's
 * idempotency key: {@code void onOrder(@Payload Order order, @Header("orderId") @IdempotencyKey
 * String orderId)}. Its {@code toString()} is the key; {@code null} or blank dead-letters the
 * message ({@code NO_KEY}, {@code INVALID_KEY}). At most one per method; not on batch listeners.
 * (Not to be confused with {@code io.idem.IdempotencyKey}, the key itself.)
 */
@Target(ElementType.PARAMETER)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotencyKey {}
