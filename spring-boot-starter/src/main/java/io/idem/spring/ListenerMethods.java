package io.idem.spring;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.handler.invocation.InvocableHandlerMethod;
import org.springframework.util.ReflectionUtils;

/**
 * Which methods a listener container's listener calls. Spring Kafka, Spring AMQP, Spring JMS and
 * Spring Cloud AWS SQS all build a container's listener as an adapter around one Spring Messaging
 * {@link InvocableHandlerMethod} per listener method (several for a class-level listener with
 * handler methods), but none of them makes it public; this looks for them in the adapter's fields
 * (and the fields of what they hold, a few levels deep, within those libraries' classes only), so
 * that Idem can tell which containers run an {@link Idempotent} method. Stateless.
 */
final class ListenerMethods {
  /** Deep enough for the SQS adapter chain (async adapter → blocking adapter → composite → list). */
  private static final int MAX_DEPTH = 6;

  private ListenerMethods() {}

  /** The methods {@code listener} invokes; empty when none could be found. */
  static Set<Method> of(@Nullable Object listener) {
    Set<Method> methods = new LinkedHashSet<>();
    if (listener == null) {
      return methods;
    }
    Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    Deque<Object[]> queue = new ArrayDeque<>();
    queue.add(new Object[] {listener, 0});
    while (!queue.isEmpty()) {
      Object[] next = queue.poll();
      Object value = next[0];
      int depth = (int) next[1];
      if (value == null || !seen.add(value)) {
        continue;
      }
      if (value instanceof InvocableHandlerMethod handler) {
        methods.add(handler.getMethod());
        continue;
      }
      if (depth >= MAX_DEPTH) {
        continue;
      }
      if (value instanceof Collection<?> collection) {
        collection.forEach(element -> queue.add(new Object[] {element, depth + 1}));
        continue;
      }
      if (value instanceof Map<?, ?> map) {
        map.values().forEach(element -> queue.add(new Object[] {element, depth + 1}));
        continue;
      }
      if (!isListenerLibraryType(value.getClass())) {
        continue;
      }
      for (Class<?> type = value.getClass(); type != null && type != Object.class; type = type.getSuperclass()) {
        for (Field field : type.getDeclaredFields()) {
          if (Modifier.isStatic(field.getModifiers()) || field.getType().isPrimitive()) {
            continue;
          }
          Object fieldValue;
          try {
            ReflectionUtils.makeAccessible(field);
            fieldValue = field.get(value);
          } catch (RuntimeException | IllegalAccessException e) {
            continue; // not readable: this path holds no handler Idem can see
          }
          queue.add(new Object[] {fieldValue, depth + 1});
        }
      }
    }
    return methods;
  }

  /** The listener libraries' own classes, and Idem's wrappers around them. */
  private static boolean isListenerLibraryType(Class<?> type) {
    String name = type.getName();
    return name.startsWith("org.springframework.kafka.")
        || name.startsWith("org.springframework.amqp.")
        || name.startsWith("org.springframework.jms.")
        || name.startsWith("org.springframework.messaging.")
        || name.startsWith("io.awspring.cloud.sqs.")
        || name.startsWith("io.idem.spring.");
  }
}
