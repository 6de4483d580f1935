package io.idem.spring;

import io.idem.IdempotencyKeyExtractor;
import io.idem.InboundMessage;
import io.idem.KeyExtraction;
import io.idem.KeySource;
import java.lang.reflect.Method;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Where an {@link Idempotent} method's key comes from when the method says so: an {@link
 * IdempotencyKey} parameter, a SpEL {@link Idempotent#key()}, a {@link Idempotent#keyHeader()}, a
 * {@link Idempotent#keyJsonPointer()} — or {@link #DEFAULT}, {@code idem.key.*}. Immutable and
 * thread-safe; {@link #resolve} is called per delivery on the listener thread.
 */
abstract sealed class MethodKey {
  /** {@code idem.key.*} (Idem's default chain unless set). */
  static final MethodKey DEFAULT = new Default();

  private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();
  /** This call's key from its arguments: the value, a {@link RuntimeException} it failed with, or null. */
  private static final ThreadLocal<@Nullable Object> RESOLVED = new ThreadLocal<>();

  /** A stable name for caching pipelines: equal for keys read the same way. */
  abstract String id();

  /** The extractor of the group's pipeline for this method; {@code null}: {@code idem.key.*}. */
  abstract @Nullable IdempotencyKeyExtractor extractor();

  /** Whether the key is computed from the method's arguments (so per call, not per message). */
  boolean fromArguments() {
    return false;
  }

  /** The key of this call, from its arguments; only when {@link #fromArguments()}. */
  @Nullable String resolve(Method method, Object[] arguments) {
    return null;
  }

  /**
   * The method's key, or {@link #DEFAULT}.
   *
   * @throws IllegalStateException when the method asks for more than one, or the SpEL does not parse
   */
  static MethodKey of(Method method, Idempotent annotation) {
    int parameter = -1;
    for (int i = 0; i < method.getParameterCount(); i++) {
      if (method.getParameters()[i].isAnnotationPresent(IdempotencyKey.class)) {
        if (parameter >= 0) {
          throw new IllegalStateException("more than one @IdempotencyKey parameter");
        }
        parameter = i;
      }
    }
    int given = (parameter >= 0 ? 1 : 0) + (annotation.key().isEmpty() ? 0 : 1)
        + (annotation.keyHeader().isEmpty() ? 0 : 1) + (annotation.keyJsonPointer().isEmpty() ? 0 : 1);
    if (given > 1) {
      throw new IllegalStateException("names its key more than one way (@IdempotencyKey, key,"
          + " keyHeader, keyJsonPointer): keep one");
    }
    if (parameter >= 0) {
      boolean header = method.getParameters()[parameter].isAnnotationPresent(
          org.springframework.messaging.handler.annotation.Header.class);
      return new Parameter(parameter, header ? KeySource.HEADER : KeySource.PAYLOAD,
          "@IdempotencyKey parameter " + parameter + " of " + method.getName());
    }
    if (!annotation.key().isEmpty()) {
      try {
        return new Spel(new SpelExpressionParser().parseExpression(annotation.key()), annotation.key());
      } catch (ParseException e) {
        throw new IllegalStateException("key \"" + annotation.key() + "\" is not a SpEL expression: "
            + e.getMessage(), e);
      }
    }
    if (!annotation.keyHeader().isEmpty()) {
      return new Fixed("header:" + annotation.keyHeader(), IdempotencyKeyExtractor.header(annotation.keyHeader()));
    }
    if (!annotation.keyJsonPointer().isEmpty()) {
      return new Fixed("json:" + annotation.keyJsonPointer(),
          IdempotencyKeyExtractor.jsonPointer(annotation.keyJsonPointer()));
    }
    return DEFAULT;
  }

  /**
   * Runs {@code body} with this call's key from {@code arguments} as the key the argument-based
   * extractor answers; an expression that throws makes the key invalid ({@code INVALID_KEY}).
   */
  <T> T withResolved(Method method, Object[] arguments, java.util.function.Supplier<T> body) {
    if (!fromArguments()) {
      return body.get();
    }
    Object key;
    try {
      key = resolve(method, arguments);
    } catch (RuntimeException e) {
      key = e;
    }
    Object previous = RESOLVED.get();
    RESOLVED.set(key);
    try {
      return body.get();
    } finally {
      RESOLVED.set(previous);
    }
  }

  private static final class Default extends MethodKey {
    @Override
    String id() {
      return "default";
    }

    @Override
    @Nullable IdempotencyKeyExtractor extractor() {
      return null;
    }
  }

  private static final class Fixed extends MethodKey {
    private final String id;
    private final IdempotencyKeyExtractor extractor;

    Fixed(String id, IdempotencyKeyExtractor extractor) {
      this.id = id;
      this.extractor = extractor;
    }

    @Override
    String id() {
      return id;
    }

    @Override
    IdempotencyKeyExtractor extractor() {
      return extractor;
    }
  }

  /** The key computed from the arguments, handed to the pipeline through {@link #RESOLVED}. */
  private abstract static sealed class FromArguments extends MethodKey permits Parameter, Spel {
    private final KeySource source;
    private final String origin;

    FromArguments(KeySource source, String origin) {
      this.source = source;
      this.origin = origin;
    }

    @Override
    boolean fromArguments() {
      return true;
    }

    @Override
    IdempotencyKeyExtractor extractor() {
      return new IdempotencyKeyExtractor() {
        @Override
        public KeyExtraction extract(InboundMessage message) {
          Object value = RESOLVED.get();
          if (value instanceof RuntimeException failure) {
            return KeyExtraction.rejected(origin + " failed: " + failure.getMessage());
          }
          return value == null ? KeyExtraction.absent(origin + " is null")
              : KeyExtraction.found((String) value, source, origin);
        }

        @Override
        public String toString() {
          return origin;
        }
      };
    }
  }

  private static final class Parameter extends FromArguments {
    private final int index;

    Parameter(int index, KeySource source, String origin) {
      super(source, origin);
      this.index = index;
    }

    @Override
    String id() {
      return "parameter";
    }

    @Override
    @Nullable String resolve(Method method, Object[] arguments) {
      Object value = arguments[index];
      return value == null ? null : value.toString();
    }
  }

  private static final class Spel extends FromArguments {
    private final Expression expression;

    Spel(Expression expression, String text) {
      super(KeySource.PAYLOAD, "key expression \"" + text + "\"");
      this.expression = Objects.requireNonNull(expression);
    }

    @Override
    String id() {
      return "spel";
    }

    @Override
    @Nullable String resolve(Method method, Object[] arguments) {
      MethodBasedEvaluationContext context =
          new MethodBasedEvaluationContext(new Root(arguments), method, arguments, NAMES);
      Object value = expression.getValue(context);
      return value == null ? null : value.toString();
    }
  }

  /** The SpEL root: {@code args[0]} as well as {@code #p0}, {@code #a0} and parameter names. */
  record Root(Object[] args) {}
}
