package io.idem.spring;

import io.awspring.cloud.sqs.listener.AbstractMessageListenerContainer;
import io.awspring.cloud.sqs.listener.AsyncMessageListener;
import io.awspring.cloud.sqs.listener.ListenerMode;
import io.awspring.cloud.sqs.listener.MessageListenerContainer;
import io.awspring.cloud.sqs.listener.MessageListenerContainerRegistry;
import io.awspring.cloud.sqs.listener.acknowledgement.handler.AcknowledgementMode;
import io.awspring.cloud.sqs.listener.errorhandler.AsyncErrorHandler;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.jspecify.annotations.Nullable;
import org.springframework.context.ApplicationContext;
import org.springframework.messaging.Message;

/**
 * Spring Cloud AWS's SQS containers of {@code @Idempotent} methods. What Idem reads and does,
 * from the container's effective options (the factory's, overridden by the {@code @SqsListener}'s):
 *
 * <ul>
 *   <li>acknowledgement mode {@code ON_SUCCESS} (the default): deleted after the method returned,
 *       not after a failure — allowed; {@code ALWAYS} (deleted after a failure too) and {@code
 *       MANUAL} (deleted only when the method acknowledges, which it cannot):
 *       <em>refused</em>;
 *   <li>an error handler: <em>owned</em> — one that completes normally has the container delete
 *       the message, so what Idem hands back never reaches it (the message stays, comes back after
 *       its visibility timeout); other failures go to it as before;
 *   <li>batch listener mode: <em>refused</em> (Idem takes one message per call on SQS).
 * </ul>
 */
final class SqsContainers implements ListenerContainers {

  @Override
  public String kind() {
    return "sqs";
  }

  @Override
  public List<Container> find(ApplicationContext context, Resources resources) {
    Set<MessageListenerContainer<?>> all = new LinkedHashSet<>();
    context.getBeansOfType(MessageListenerContainerRegistry.class, false, false).values()
        .forEach(registry -> all.addAll(registry.getListenerContainers()));
    context.getBeansOfType(MessageListenerContainer.class, false, false).values().forEach(all::add);
    List<Container> found = new ArrayList<>();
    for (MessageListenerContainer<?> container : all) {
      if (!(container instanceof AbstractMessageListenerContainer<?, ?, ?> sqs)) {
        continue;
      }
      Set<Method> methods = new LinkedHashSet<>();
      ListenerMethods.of(sqs.getMessageListener()).stream().filter(ListenerContainers::idempotent).forEach(methods::add);
      if (!methods.isEmpty()) {
        found.add(new SqsContainer(sqs, methods, resources));
      }
    }
    return found;
  }

  private record SqsContainer(AbstractMessageListenerContainer<?, ?, ?> container, Set<Method> methods,
      Resources resources) implements Container {
    @Override
    public String name() {
      return "SQS container '" + container.getId() + "' (queues " + String.join(",", container.getQueueNames()) + ")";
    }

    @Override
    public List<String> refusals() {
      List<String> refused = new ArrayList<>();
      AcknowledgementMode mode = container.getContainerOptions().getAcknowledgementMode();
      if (mode == AcknowledgementMode.ALWAYS) {
        refused.add(name() + " has acknowledgement mode ALWAYS: it deletes a message after a failure"
            + " too, so a retry Idem asks for would be lost; use ON_SUCCESS (the default):"
            + " SqsMessageListenerContainerFactory.configure(options -> options.acknowledgementMode("
            + "AcknowledgementMode.ON_SUCCESS)), or @SqsListener(acknowledgementMode = \"ON_SUCCESS\")");
      } else if (mode == AcknowledgementMode.MANUAL) {
        refused.add(name() + " has acknowledgement mode MANUAL: messages would be deleted only when"
            + " the method acknowledges, which an @Idempotent method cannot; use ON_SUCCESS (the default)");
      }
      if (container.getContainerOptions().getListenerMode() == ListenerMode.BATCH) {
        refused.add(name() + " is in batch listener mode: Idem takes one message per call on SQS");
      }
      return refused;
    }

    @Override
    public String settings() {
      return name() + ": acknowledgement mode " + container.getContainerOptions().getAcknowledgementMode()
          + ", error handler owned for Idem's hand-backs";
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public void takeOver() {
      AsyncMessageListener listener = container.getMessageListener();
      if (listener instanceof Capture || listener == null) {
        return;
      }
      AbstractMessageListenerContainer raw = container;
      raw.setAsyncMessageListener(new Capture(listener, methods.iterator().next(), resources.unconvertible()));
      raw.setErrorHandler(new OwnedErrorHandler((AsyncErrorHandler<Object>) (AsyncErrorHandler) container.getErrorHandler()));
    }
  }

  /** Puts the Spring message (carrying the SQS message) in {@link CurrentDelivery} around the listener. */
  static final class Capture implements AsyncMessageListener<Object> {
    private final AsyncMessageListener<Object> delegate;
    private final Method method;
    private final Unconvertible unconvertible;

    Capture(AsyncMessageListener<Object> delegate, Method method, Unconvertible unconvertible) {
      this.delegate = delegate;
      this.method = method;
      this.unconvertible = unconvertible;
    }

    @Override
    public CompletableFuture<Void> onMessage(Message<Object> message) {
      try {
        return CurrentDelivery.with("sqs", message, null, delivery -> {
          CompletableFuture<Void> result = delegate.onMessage(message);
          if (result.isCompletedExceptionally() && !delivery.reached()) {
            RuntimeException failure = failure(result);
            if (failure != null && Unconvertible.isConversionFailure(failure)) {
              unconvertible.deadLetter(method, message, failure);
              return CompletableFuture.completedFuture(null);
            }
          }
          return result;
        });
      } catch (Exception e) {
        return CompletableFuture.failedFuture(e);
      }
    }

    @Override
    public CompletableFuture<Void> onMessage(Collection<Message<Object>> messages) {
      return delegate.onMessage(messages);
    }

    private static @Nullable RuntimeException failure(CompletableFuture<Void> result) {
      try {
        result.get();
        return null;
      } catch (ExecutionException | CompletionException e) {
        return e.getCause() instanceof RuntimeException runtime ? runtime : new IllegalStateException(e.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
  }

  /** What Idem handed back stays failed (not deleted); the rest goes to the container's handler. */
  private record OwnedErrorHandler(@Nullable AsyncErrorHandler<Object> delegate) implements AsyncErrorHandler<Object> {
    @Override
    public CompletableFuture<Void> handle(Message<Object> message, Throwable failure) {
      if (delegate == null || IdempotentRetryException.find(failure) != null) {
        return CompletableFuture.failedFuture(failure);
      }
      return delegate.handle(message, failure);
    }

    @Override
    public CompletableFuture<Void> handle(Collection<Message<Object>> messages, Throwable failure) {
      if (delegate == null || IdempotentRetryException.find(failure) != null) {
        return CompletableFuture.failedFuture(failure);
      }
      return delegate.handle(messages, failure);
    }
  }
}
