package io.idem.spring;

import io.idem.IdempotentConsumer;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.RetryPolicy;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.ibatis.session.SqlSession;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The advice around an {@link Idempotent} listener method: the delivery (the method's native
 * message parameter, or what Idem's wrapper around the container captured, {@link
 * CurrentDelivery}) through Idem's pipeline of the method's consumer group, the method's body as
 * the handler, inside Idem's transaction ({@link SpringTransactionStore}). What the container sees:
 *
 * <table>
 *   <caption>Outcome → what the method does</caption>
 *   <tr><th>outcome</th><th>the method</th><th>the container</th></tr>
 *   <tr><td>PROCESSED</td><td>returns the body's result, after Idem's commit</td><td>acks</td></tr>
 *   <tr><td>DUPLICATE</td><td>returns {@code null}, body not run</td><td>acks</td></tr>
 *   <tr><td>DEAD_LETTERED, CONFLICT</td><td>returns {@code null} once the copy is stored</td><td>acks</td></tr>
 *   <tr><td>RETRY, RETRY_STORE_UNAVAILABLE, RETRY_TRANSACTION</td><td>Kafka: waits the backoff and
 *       runs again in the same call while {@code max.poll.interval.ms} allows, else throws {@link
 *       IdempotentRetryException} with the rest of the backoff; the others: waits the backoff,
 *       throws it</td><td>redelivers (Kafka: Idem's error handler seeks back and pauses the
 *       partition)</td></tr>
 *   <tr><td>RELEASED</td><td>throws {@link IdempotentRetryException} at once</td><td>redelivers</td></tr>
 *   <tr><td>the dead-letter copy not stored</td><td>waits the policy's backoff, throws {@link
 *       IdempotentRetryException}</td><td>redelivers</td></tr>
 * </table>
 *
 * <p>Attempts: {@link ListenerAttempts}. Thread-safe: containers call it from their consumer
 * threads at once.
 */
final class IdempotentListenerInterceptor implements MethodInterceptor, Unconvertible {
  private final Supplier<IdemPipelines> pipelines;
  private final Supplier<@Nullable String> defaultGroup;
  private final List<ListenerDeliveries> kinds;
  private final Map<Method, MethodBinding> bindings = new ConcurrentHashMap<>();
  private final ListenerAttempts attempts = new ListenerAttempts();
  private final UnsettledDeliveries unsettled = new UnsettledDeliveries();

  IdempotentListenerInterceptor(Supplier<IdemPipelines> pipelines,
      Supplier<@Nullable String> defaultGroup, List<ListenerDeliveries> kinds) {
    this.pipelines = pipelines;
    this.defaultGroup = defaultGroup;
    this.kinds = List.copyOf(kinds);
  }

  /**
   * Binds {@code method} (cached), refusing what cannot be made idempotent.
   *
   * @throws IllegalStateException naming the method and what to change
   */
  MethodBinding bind(Method method) {
    return bindings.computeIfAbsent(method, m -> MethodBinding.of(m, kinds, defaultGroup.get()));
  }

  /** The methods bound so far, with their bindings. */
  Map<Method, MethodBinding> bindings() {
    return Map.copyOf(bindings);
  }

  /** The listener kinds whose libraries are on the classpath. */
  List<ListenerDeliveries> kinds() {
    return kinds;
  }

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    MethodBinding binding = bind(invocation.getMethod());
    if (TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new IllegalStateException(SpringTransactionStore.OUTER_TRANSACTION_REFUSED);
    }
    Object[] arguments = invocation.getArguments();
    CurrentDelivery captured = CurrentDelivery.get();
    if (captured != null && !captured.kind().equals(binding.kind().kind())) {
      captured = null;
    }
    Object delivered;
    if (binding.nativeParameter() >= 0) {
      delivered = arguments[binding.nativeParameter()];
    } else if (captured != null) {
      delivered = captured.message();
    } else {
      throw new IllegalStateException(binding.name() + " was called without a message Idem can"
          + " read: it takes no native message parameter, and no listener container Idem watches"
          + " is calling it (Idem takes over the containers of @Idempotent methods at start-up)");
    }
    if (captured != null) {
      captured.markReached();
    }
    KafkaBudget budget = captured == null ? null : captured.budget();
    KafkaAssignments assignments = captured == null ? null : captured.assignments();
    if (delivered instanceof List<?>) {
      return binding.kind().invokeBatch(new BatchCall(invocation, binding, captured.batch(), budget, assignments));
    }
    return invokeOne(invocation, binding, delivered, budget, assignments);
  }

  /**
   * Whether {@code delivered} is an unaccounted redelivery (docs/FAILURES.md, "Attempts that
   * survive the process"): not known to this process's in-memory count, and the broker says (or,
   * on Kafka, the partition's assignment says) it may have been handed to a handler before.
   *
   * <p>Kafka's flag is a guess — the first records after an assignment, which are usually new —
   * and the pipeline counts a flagged delivery's attempt as the store's count + 1 (the earlier
   * run it stands for): with {@code maxAttempts} 1 that would dead-letter the first record of every
   * assignment without running it, so with {@code maxAttempts} 1 Kafka records are not flagged
   * (docs/SPRING-BOOT.md, "Attempts").
   */
  private boolean unaccounted(ListenerDeliveries kind, String delivery, Object delivered,
      @Nullable KafkaAssignments assignments, int maxAttempts) {
    return !attempts.knows(delivery) && (kind.deliveredBefore(delivered)
        || (assignments != null && maxAttempts > 1 && assignments.mayBeRedelivered(delivered)));
  }

  private @Nullable Object invokeOne(MethodInvocation invocation, MethodBinding binding, Object delivered,
      @Nullable KafkaBudget budget, @Nullable KafkaAssignments assignments) throws Throwable {
    ListenerDeliveries kind = binding.kind();
    String delivery = binding.consumerGroup() + "|" + kind.deliveryId(delivered);
    IdempotentConsumer<SqlSession> pipeline =
        pipelines.get().pipeline(binding.consumerGroup(), binding.key(), false);
    RetryPolicy policy = pipeline.retryPolicy();
    long started = System.nanoTime();
    while (true) {
      InboundMessage message = kind.toInbound(delivered, attempts.next(delivery),
          unaccounted(kind, delivery, delivered, assignments, policy.maxAttempts()));
      DropInAcknowledgement acknowledgement = new DropInAcknowledgement(kind, delivered, binding.deadLetter());
      Object[] result = new Object[1];
      ProcessingOutcome outcome;
      try {
        outcome = binding.key().withResolved(binding.method(), invocation.getArguments(),
            () -> IdemPipelines.handlerScope(
                (inbound, session) -> result[0] = proceed(invocation, invocation.getArguments()),
                () -> pipeline.process(message, acknowledgement)));
      } catch (RuntimeException notSettled) {
        // the acknowledgement threw (the dead-letter copy was not stored): not an attempt
        Duration delay = unsettled.failed(delivery, notSettled, policy);
        throw handBack(kind, ProcessingOutcome.DEAD_LETTERED, delivery, delay, budget, started);
      }
      switch (outcome) {
        case PROCESSED:
          settled(delivery);
          if (assignments != null) {
            assignments.applied(delivered);
          }
          return result[0];
        case DUPLICATE:
        case CONFLICT:
        case DEAD_LETTERED:
          settled(delivery);
          return null;
        case RETRY:
          attempts.failed(delivery);
          break;
        case RETRY_STORE_UNAVAILABLE:
        case RETRY_TRANSACTION:
          attempts.handedBack(delivery);
          break;
        default: // RELEASED: the consumer is shutting down
          throw kind.handBack(new IdempotentRetryException(outcome, delivery, Duration.ZERO, Duration.ZERO));
      }
      Duration delay = acknowledgement.delay();
      if (kind.retriesInCall() && budget != null && fits(started, delay, budget.perCall())) {
        if (!sleep(delay)) {
          throw kind.handBack(new IdempotentRetryException(ProcessingOutcome.RELEASED, delivery,
              Duration.ZERO, Duration.ZERO));
        }
        continue;
      }
      throw handBack(kind, outcome, delivery, delay, budget, started);
    }
  }

  /**
   * Dead-letters a delivery the container could not convert for {@code method} ({@link
   * Unconvertible}): through the method's pipeline, with a handler that refuses it as {@code
   * NON_RETRYABLE}, the conversion error its detail.
   */
  @Override
  public void deadLetter(Method method, Object delivered, RuntimeException failure) {
    MethodBinding binding = bind(method);
    ListenerDeliveries kind = binding.kind();
    String delivery = binding.consumerGroup() + "|" + kind.deliveryId(delivered);
    IdempotentConsumer<SqlSession> pipeline = pipelines.get().pipeline(binding.consumerGroup(),
        binding.key().fromArguments() ? MethodKey.DEFAULT : binding.key(), false);
    CurrentDelivery captured = CurrentDelivery.get();
    InboundMessage message = kind.toInbound(delivered, attempts.next(delivery),
        unaccounted(kind, delivery, delivered, captured == null ? null : captured.assignments(),
            pipeline.retryPolicy().maxAttempts()));
    DropInAcknowledgement acknowledgement = new DropInAcknowledgement(kind, delivered, binding.deadLetter());
    ProcessingOutcome outcome;
    try {
      outcome = IdemPipelines.handlerScope((inbound, session) -> {
        throw new io.idem.NonRetryableException("the container could not convert the message for "
            + binding.name() + ": " + failure, failure);
      }, () -> pipeline.process(message, acknowledgement));
    } catch (RuntimeException notSettled) {
      Duration delay = unsettled.failed(delivery, notSettled, pipeline.retryPolicy());
      throw handBack(kind, ProcessingOutcome.DEAD_LETTERED, delivery, delay, null, System.nanoTime());
    }
    if (outcome.isSettled()) {
      settled(delivery);
      return;
    }
    throw handBack(kind, outcome, delivery, acknowledgement.delay(), null, System.nanoTime());
  }

  private void settled(String delivery) {
    attempts.settled(delivery);
    unsettled.settled(delivery);
  }

  /**
   * The exception that gets {@code delivery} back after {@code delay}: on Kafka with the delay to
   * go (Idem's error handler pauses the partition for it), elsewhere after waiting it here.
   */
  static RuntimeException handBack(ListenerDeliveries kind, ProcessingOutcome outcome, String delivery,
      Duration delay, @Nullable KafkaBudget budget, long started) {
    if (kind.retriesInCall() && budget != null) {
      return kind.handBack(new IdempotentRetryException(outcome, delivery, Duration.ZERO, delay));
    }
    boolean slept = sleep(delay);
    return kind.handBack(new IdempotentRetryException(slept ? outcome : ProcessingOutcome.RELEASED,
        delivery, slept ? delay : Duration.ZERO, Duration.ZERO));
  }

  /** Whether waiting {@code delay} more keeps the call within {@code budget} since {@code started}. */
  static boolean fits(long started, Duration delay, Duration budget) {
    return Duration.ofNanos(System.nanoTime() - started).plus(delay).compareTo(budget) <= 0;
  }

  /** Waits {@code delay} on the listener thread; {@code false} when interrupted (flag restored). */
  static boolean sleep(Duration delay) {
    if (delay.isZero() || delay.isNegative()) {
      return true;
    }
    try {
      Thread.sleep(delay.toMillis(), (int) (delay.toNanosPart() % 1_000_000));
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Runs the method's body once more, with {@code arguments}. */
  static @Nullable Object proceed(MethodInvocation invocation, Object[] arguments) throws Exception {
    try {
      MethodInvocation run = invocation instanceof ProxyMethodInvocation proxied
          ? proxied.invocableClone(arguments) : invocation;
      return run.proceed();
    } catch (Exception | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** One call of a batch listener method, for {@link ListenerDeliveries#invokeBatch}. */
  final class BatchCall {
    final MethodInvocation invocation;
    final MethodBinding binding;
    final List<Object> records;
    final @Nullable KafkaBudget budget;
    final @Nullable KafkaAssignments assignments;

    BatchCall(MethodInvocation invocation, MethodBinding binding, List<Object> records,
        @Nullable KafkaBudget budget, @Nullable KafkaAssignments assignments) {
      this.invocation = invocation;
      this.binding = binding;
      this.records = records;
      this.budget = budget;
      this.assignments = assignments;
    }

    /** Whether {@code record}'s delivery is an unaccounted redelivery (see the record path). */
    boolean unaccounted(String delivery, Object record, int maxAttempts) {
      return IdempotentListenerInterceptor.this.unaccounted(binding.kind(), delivery, record, assignments,
          maxAttempts);
    }

    /** {@code record} was applied ({@code PROCESSED}). */
    void applied(Object record) {
      if (assignments != null) {
        assignments.applied(record);
      }
    }

    ListenerAttempts attempts() {
      return attempts;
    }

    UnsettledDeliveries unsettled() {
      return unsettled;
    }

    IdempotentConsumer<SqlSession> pipeline() {
      return pipelines.get().pipeline(binding.consumerGroup(), binding.key(), true);
    }
  }
}
