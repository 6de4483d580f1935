package io.idem.spring;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * A delivery the container could not convert for the {@link Idempotent} method (a payload that is
 * not the POJO's JSON, a header of the wrong type): the method never ran, so Idem never saw it,
 * and the container's own error handling would retry it and then drop or log it. Idem's wrapper
 * around the container hands such a delivery here instead, and it is dead-lettered through the
 * method's pipeline as {@code NON_RETRYABLE}, with the conversion error as its detail (a key
 * already processed is a duplicate, as ever). Thread-safe.
 */
interface Unconvertible {

  /**
   * Dead-letters {@code message} of {@code container}'s first {@code @Idempotent} method.
   *
   * @throws RuntimeException to hand it back when the dead letter could not be stored
   */
  void deadLetter(java.lang.reflect.Method method, Object message, RuntimeException failure);

  /** Whether {@code failure} says the container could not convert the message for the method. */
  static boolean isConversionFailure(Throwable failure) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof org.springframework.messaging.converter.MessageConversionException
          || t instanceof org.springframework.messaging.handler.invocation.MethodArgumentResolutionException
          || t instanceof org.springframework.core.convert.ConversionException) {
        return true;
      }
      if (t instanceof org.springframework.messaging.MessageHandlingException handling
          && handling.getMessage() != null && handling.getMessage().contains("Missing header")) {
        return true; // a required @Header the message does not have (spring-messaging's resolvers)
      }
      String name = t.getClass().getName();
      if (name.equals("org.springframework.kafka.support.converter.ConversionException")
          || name.equals("org.springframework.amqp.support.converter.MessageConversionException")
          || name.equals("org.springframework.jms.support.converter.MessageConversionException")) {
        return true;
      }
    }
    return false;
  }
}
