package io.idem.spring;

import com.rabbitmq.client.Channel;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.aopalliance.aop.Advice;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageListener;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareBatchMessageListener;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareMessageListener;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ErrorHandler;
import org.springframework.util.ReflectionUtils;

/**
 * Spring AMQP's containers of {@code @Idempotent} methods. What Idem reads and does:
 *
 * <ul>
 *   <li>AcknowledgeMode {@code NONE} (the broker forgets the message as it sends it):
 *       <em>refused</em>; {@code MANUAL} (acked only when the method acks on its {@code Channel},
 *       which it cannot take): <em>refused</em>; {@code AUTO} (the default) acks after the method
 *       returned;
 *   <li>{@code defaultRequeueRejected=false} (a failed message rejected without requeue, so
 *       dropped or dead-lettered by the broker without Idem's reason): <em>owned</em>, what Idem
 *       hands back is an {@code ImmediateRequeueAmqpException}, requeued whatever that says;
 *   <li>a retry interceptor in the advice chain ({@code spring.rabbitmq.listener.simple.retry.enabled}:
 *       retries the body inside one delivery behind Idem's count, then rejects it):
 *       <em>refused</em>;
 *   <li>a batch listener: <em>refused</em> (Idem takes one message per call on RabbitMQ);
 *   <li>the error handler: kept, except that Idem's hand-backs are not logged again (Idem did).
 * </ul>
 */
final class RabbitContainers implements ListenerContainers {

  @Override
  public String kind() {
    return "rabbitmq";
  }

  @Override
  public List<Container> find(ApplicationContext context, Resources resources) {
    Set<MessageListenerContainer> all = new LinkedHashSet<>();
    context.getBeansOfType(RabbitListenerEndpointRegistry.class, false, false).values()
        .forEach(registry -> all.addAll(registry.getListenerContainers()));
    all.addAll(context.getBeansOfType(MessageListenerContainer.class, false, false).values());
    List<Container> found = new ArrayList<>();
    for (MessageListenerContainer container : all) {
      if (!(container instanceof AbstractMessageListenerContainer amqp)) {
        continue;
      }
      Set<Method> methods = new LinkedHashSet<>();
      ListenerMethods.of(amqp.getMessageListener()).stream().filter(ListenerContainers::idempotent).forEach(methods::add);
      if (!methods.isEmpty()) {
        found.add(new RabbitContainer(amqp, methods, resources));
      }
    }
    return found;
  }

  private record RabbitContainer(AbstractMessageListenerContainer container, Set<Method> methods, Resources resources)
      implements Container {
    @Override
    public String name() {
      return "RabbitMQ container '" + container.getListenerId() + "' (queues "
          + String.join(",", container.getQueueNames()) + ")";
    }

    @Override
    public List<String> refusals() {
      List<String> refused = new ArrayList<>();
      AcknowledgeMode mode = container.getAcknowledgeMode();
      if (mode == AcknowledgeMode.NONE) {
        refused.add(name() + " has AcknowledgeMode.NONE (the broker drops the message as it delivers"
            + " it): use AUTO (spring.rabbitmq.listener.simple.acknowledge-mode=auto, or the"
            + " container factory's acknowledgeMode)");
      } else if (mode == AcknowledgeMode.MANUAL) {
        refused.add(name() + " has AcknowledgeMode.MANUAL: the message would be acked only when the"
            + " method acks on its Channel, which an @Idempotent method cannot take; use AUTO"
            + " (spring.rabbitmq.listener.simple.acknowledge-mode=auto, or @RabbitListener(ackMode = \"AUTO\"))");
      }
      for (Advice advice : adviceChain()) {
        if (advice.getClass().getName().toLowerCase(java.util.Locale.ROOT).contains("retry")) {
          refused.add(name() + " has a retry interceptor (" + advice.getClass().getName() + ") in its"
              + " advice chain: it would run the body again inside one delivery, behind Idem's"
              + " attempt count, and then reject the message without requeue; remove it"
              + " (spring.rabbitmq.listener.simple.retry.enabled=false): Idem's idem.retry.* decides");
        }
      }
      if (container.getMessageListener() instanceof ChannelAwareBatchMessageListener
          || container.getMessageListener() instanceof org.springframework.amqp.core.BatchMessageListener) {
        refused.add(name() + " is a batch listener: Idem takes one message per call on RabbitMQ");
      }
      return refused;
    }

    @Override
    public String settings() {
      return name() + ": AcknowledgeMode " + container.getAcknowledgeMode() + ", defaultRequeueRejected "
          + requeueRejected() + " (Idem's hand-backs are requeued either way)";
    }

    private String requeueRejected() {
      Method getter = ReflectionUtils.findMethod(AbstractMessageListenerContainer.class, "isDefaultRequeueRejected");
      if (getter == null) {
        return "unknown";
      }
      ReflectionUtils.makeAccessible(getter);
      return String.valueOf(ReflectionUtils.invokeMethod(getter, container));
    }

    private List<Advice> adviceChain() {
      Method getter = ReflectionUtils.findMethod(AbstractMessageListenerContainer.class, "getAdviceChain");
      if (getter == null) {
        return List.of();
      }
      ReflectionUtils.makeAccessible(getter);
      Object chain = ReflectionUtils.invokeMethod(getter, container);
      return chain instanceof Advice[] advices ? Arrays.asList(advices) : List.of();
    }

    @Override
    public void takeOver() {
      MessageListener listener = container.getMessageListener();
      if (listener instanceof Capture || listener == null) {
        return;
      }
      container.setMessageListener(new Capture(listener, methods.iterator().next(), resources.unconvertible()));
      container.setErrorHandler(new QuietHandBacks(container.getErrorHandler()));
    }
  }

  /** Puts the AMQP message in {@link CurrentDelivery} around the container's listener. */
  static final class Capture implements ChannelAwareMessageListener {
    private final MessageListener delegate;
    private final Method method;
    private final Unconvertible unconvertible;

    Capture(MessageListener delegate, Method method, Unconvertible unconvertible) {
      this.delegate = delegate;
      this.method = method;
      this.unconvertible = unconvertible;
    }

    @Override
    public void onMessage(Message message, @Nullable Channel channel) throws Exception {
      CurrentDelivery.with("rabbitmq", message, null, delivery -> {
        try {
          if (delegate instanceof ChannelAwareMessageListener aware) {
            aware.onMessage(message, channel);
          } else {
            delegate.onMessage(message);
          }
        } catch (RuntimeException e) {
          if (delivery.reached() || !Unconvertible.isConversionFailure(e)) {
            throw e;
          }
          unconvertible.deadLetter(method, message, e);
        }
        return null;
      });
    }

    @Override
    public void containerAckMode(AcknowledgeMode mode) {
      delegate.containerAckMode(mode);
    }

    @Override
    public boolean isAsyncReplies() {
      return delegate.isAsyncReplies();
    }
  }

  /** The container's error handler, without a second log line for what Idem handed back. */
  private record QuietHandBacks(ErrorHandler delegate) implements ErrorHandler {
    @Override
    public void handleError(Throwable failure) {
      if (IdempotentRetryException.find(failure) == null) {
        delegate.handleError(failure);
      }
    }
  }
}
