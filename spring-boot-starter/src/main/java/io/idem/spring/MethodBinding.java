package io.idem.spring;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * How one {@link Idempotent} method is bound: its container kind, consumer group, dead-letter
 * destination, where its key comes from, and which parameter (if any) is the native message or,
 * for a Kafka batch listener, the list. Immutable.
 *
 * @param nativeParameter the index of the native message parameter, or -1 (the delivery is then
 *     the one Idem's wrapper around the container captured, {@link CurrentDelivery})
 * @param listParameter the index of the first {@code List}/{@code Collection} parameter, or -1;
 *     the batch of a Kafka batch listener
 */
record MethodBinding(Method method, ListenerDeliveries kind, String consumerGroup,
    @Nullable String deadLetter, int nativeParameter, int listParameter, MethodKey key) {

  /** {@code SimpleClassName.method}, for messages. */
  String name() {
    return method.getDeclaringClass().getSimpleName() + "." + method.getName();
  }

  /**
   * Binds {@code method}, refusing what cannot be made idempotent.
   *
   * @throws IllegalStateException naming the method and what to change
   */
  static MethodBinding of(Method method, List<ListenerDeliveries> kinds, @Nullable String defaultGroup) {
    Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
    if (annotation == null) {
      throw new IllegalStateException("not @Idempotent: " + method);
    }
    String name = "@Idempotent method " + method.toGenericString();
    String group = annotation.consumerGroup().isEmpty() ? defaultGroup : annotation.consumerGroup();
    if (group == null || group.isBlank()) {
      throw new IllegalStateException(name + " names no consumerGroup and idem.consumer-group is not set");
    }
    Integer nativeIndex = null;
    ListenerDeliveries kind = null;
    int listIndex = -1;
    Class<?>[] types = method.getParameterTypes();
    for (int i = 0; i < types.length; i++) {
      for (ListenerDeliveries candidate : kinds) {
        if (candidate.acknowledgesByItself(types[i])) {
          throw new IllegalStateException(name + " takes a " + types[i].getName() + ", with which it"
              + " could acknowledge the message before Idem's transaction commits; remove it and let"
              + " the container acknowledge when the method returns");
        }
        if (nativeIndex == null && candidate.accepts(method, types[i])) {
          nativeIndex = i;
          kind = candidate;
        }
      }
      if (listIndex < 0 && (List.class.isAssignableFrom(types[i]) || Collection.class.equals(types[i]))) {
        listIndex = i;
      }
    }
    if (kind == null) {
      for (ListenerDeliveries candidate : kinds) {
        if (candidate.isListener(method)) {
          kind = candidate;
          break;
        }
      }
    }
    if (kind == null) {
      throw new IllegalStateException(name + " is not a listener Idem knows: put it on a"
          + " @KafkaListener, @RabbitListener, @JmsListener or @SqsListener method (listener"
          + " libraries on the classpath now: " + kinds.stream().map(ListenerDeliveries::kind).toList() + ")");
    }
    String refusal = kind.refusal(method);
    if (refusal != null) {
      throw new IllegalStateException(name + ": " + refusal);
    }
    MethodKey key;
    try {
      key = MethodKey.of(method, annotation);
    } catch (IllegalStateException e) {
      throw new IllegalStateException(name + " " + e.getMessage(), e);
    }
    String deadLetter = annotation.deadLetter().isEmpty() ? null : annotation.deadLetter();
    return new MethodBinding(method, kind, group, deadLetter, nativeIndex == null ? -1 : nativeIndex,
        listIndex, key);
  }
}
