package io.idem.spring;

import io.idem.DeadLetterReason;
import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.spi.Acknowledgement;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The advice around an {@link Idempotent} listener method: the container's native message through
 * Idem's pipeline of the method's consumer group, the method's body as the handler, inside Idem's
 * transaction ({@link SpringTransactionStore}). What the container sees:
 *
 * <table>
 *   <caption>Outcome → what the method does</caption>
 *   <tr><th>outcome</th><th>the method</th><th>the container</th></tr>
 *   <tr><td>PROCESSED</td><td>returns the body's result, after Idem's commit</td><td>acks</td></tr>
 *   <tr><td>DUPLICATE</td><td>returns {@code null}, body not run</td><td>acks</td></tr>
 *   <tr><td>DEAD_LETTERED, CONFLICT</td><td>returns {@code null} once the copy is stored</td><td>acks</td></tr>
 *   <tr><td>RETRY, RETRY_STORE_UNAVAILABLE, RETRY_TRANSACTION</td><td>waits the backoff, throws
 *       {@link IdempotentRetryException}</td><td>redelivers</td></tr>
 *   <tr><td>RELEASED</td><td>throws {@link IdempotentRetryException} at once</td><td>redelivers</td></tr>
 * </table>
 *
 * <p>The attempt is the broker's delivery count where it has one (JMS {@code JMSXDeliveryCount},
 * a quorum queue's {@code x-delivery-count}), else counted in memory per delivery (lost at restart,
 * which only allows more attempts). Attempts not the message's fault (store unavailable,
 * transaction retry) are not counted in memory.
 *
 * <p>Thread-safe: containers call it from their consumer threads at once.
 */
final class IdempotentListenerInterceptor implements MethodInterceptor {
  /** Bound on the in-memory attempt counts; cleared past it (more attempts, never fewer). */
  private static final int MAX_TRACKED = 100_000;

  private final Supplier<IdemPipelines> pipelines;
  private final Supplier<@Nullable String> defaultGroup;
  private final List<ListenerDeliveries> kinds;
  private final Map<Method, Binding> bindings = new ConcurrentHashMap<>();
  private final Map<String, Integer> attempts = new ConcurrentHashMap<>();

  IdempotentListenerInterceptor(Supplier<IdemPipelines> pipelines,
      Supplier<@Nullable String> defaultGroup, List<ListenerDeliveries> kinds) {
    this.pipelines = pipelines;
    this.defaultGroup = defaultGroup;
    this.kinds = List.copyOf(kinds);
  }

  /** How one annotated method is bound: which parameter is the message, of which kind. */
  record Binding(int parameter, ListenerDeliveries kind, String consumerGroup, @Nullable String deadLetter) {}

  /**
   * Binds {@code method} (cached), refusing what cannot be made idempotent.
   *
   * @throws IllegalStateException naming the method and what to change
   */
  Binding bind(Method method) {
    return bindings.computeIfAbsent(method, this::newBinding);
  }

  /** The methods bound so far, with their bindings. */
  Map<Method, Binding> bindings() {
    return Map.copyOf(bindings);
  }

  private Binding newBinding(Method method) {
    Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
    if (annotation == null) {
      throw new IllegalStateException("not @Idempotent: " + method);
    }
    String group = annotation.consumerGroup().isEmpty() ? defaultGroup.get() : annotation.consumerGroup();
    if (group == null || group.isBlank()) {
      throw new IllegalStateException("@Idempotent method " + method.toGenericString() + " names no"
          + " consumerGroup and idem.consumer-group is not set");
    }
    Integer index = null;
    ListenerDeliveries kind = null;
    Class<?>[] types = method.getParameterTypes();
    for (int i = 0; i < types.length; i++) {
      for (ListenerDeliveries candidate : kinds) {
        if (candidate.acknowledgesByItself(types[i])) {
          throw new IllegalStateException("@Idempotent method " + method.toGenericString()
              + " takes a " + types[i].getName() + ", with which it could acknowledge the message"
              + " before Idem's transaction commits; remove it and let the container acknowledge"
              + " when the method returns (Kafka AckMode RECORD or BATCH, AMQP AcknowledgeMode AUTO)");
        }
        if (index == null && candidate.accepts(method, types[i])) {
          index = i;
          kind = candidate;
        }
      }
    }
    if (index == null) {
      throw new IllegalStateException("@Idempotent method " + method.toGenericString() + " must take"
          + " the container's native message to read the key and headers from: Kafka's"
          + " ConsumerRecord, Spring AMQP's Message, a jakarta.jms.Message, or on an @SqsListener a"
          + " Spring Message (on the classpath now: "
          + kinds.stream().map(ListenerDeliveries::kind).toList() + ")");
    }
    String refusal = kind.refusal(method);
    if (refusal != null) {
      throw new IllegalStateException("@Idempotent method " + method.toGenericString() + ": " + refusal);
    }
    String deadLetter = annotation.deadLetter().isEmpty() ? null : annotation.deadLetter();
    return new Binding(index, kind, group, deadLetter);
  }

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    Binding binding = bind(invocation.getMethod());
    if (TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException(SpringTransactionStore.OUTER_TRANSACTION_REFUSED);
    }
    Object nativeMessage = invocation.getArguments()[binding.parameter()];
    ListenerDeliveries kind = binding.kind();
    String delivery = binding.consumerGroup() + "|" + kind.deliveryId(nativeMessage);
    if (attempts.size() > MAX_TRACKED) {
      attempts.clear();
    }
    int counted = attempts.merge(delivery, 1, Integer::sum);
    int attempt = Math.max(counted, kind.brokerAttempt(nativeMessage));
    InboundMessage message = kind.toInbound(nativeMessage, attempt);
    IdempotentConsumer<?> pipeline = pipelines.get().pipeline(binding.consumerGroup());
    Settled settled = new Settled(kind, nativeMessage, binding.deadLetter());
    Object[] result = new Object[1];
    ProcessingOutcome outcome = IdemPipelines.handlerScope(
        (inbound, session) -> result[0] = proceed(invocation),
        () -> pipeline.process(message, settled));
    switch (outcome) {
      case PROCESSED:
        attempts.remove(delivery);
        return result[0];
      case DUPLICATE:
      case CONFLICT:
      case DEAD_LETTERED:
        attempts.remove(delivery);
        return null;
      case RETRY_STORE_UNAVAILABLE:
      case RETRY_TRANSACTION:
        attempts.computeIfPresent(delivery, (k, n) -> n <= 1 ? null : n - 1);
        throw backOff(outcome, delivery, settled.delay);
      case RETRY:
        throw backOff(outcome, delivery, settled.delay);
      default:
        throw new IdempotentRetryException(outcome, delivery, Duration.ZERO);
    }
  }

  private static @Nullable Object proceed(MethodInvocation invocation) throws Exception {
    try {
      return invocation.proceed();
    } catch (Exception | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** Waits Idem's backoff on the listener thread, then has the container redeliver. */
  private static IdempotentRetryException backOff(
      ProcessingOutcome outcome, String delivery, Duration delay) {
    try {
      if (!delay.isZero()) {
        Thread.sleep(delay.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return new IdempotentRetryException(outcome, delivery, delay);
  }

  /**
   * The pipeline's settlement of a drop-in delivery: acks are the container's (after the method
   * returns), retries are remembered for {@link #invoke}, dead letters are copied at once.
   */
  private static final class Settled implements Acknowledgement {
    private final ListenerDeliveries kind;
    private final Object message;
    private final @Nullable String deadLetter;
    Duration delay = Duration.ZERO;

    Settled(ListenerDeliveries kind, Object message, @Nullable String deadLetter) {
      this.kind = kind;
      this.message = message;
      this.deadLetter = deadLetter;
    }

    @Override
    public void ack() {
      // the container acknowledges when the listener method returns, after Idem's commit
    }

    @Override
    public void retry(Duration value) {
      delay = value;
    }

    @Override
    public void retryWhenStoreAvailable(Duration value) {
      delay = value;
    }

    @Override
    public void release() {
      delay = Duration.ZERO;
    }

    @Override
    public void deadLetter(DeadLetterReason reason) {
      kind.deadLetter(message, reason, deadLetter);
    }
  }
}
