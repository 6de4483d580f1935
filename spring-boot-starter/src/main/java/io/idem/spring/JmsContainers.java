package io.idem.spring;

import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageListener;
import jakarta.jms.Session;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationContext;
import org.springframework.jms.config.JmsListenerEndpointRegistry;
import org.springframework.jms.listener.AbstractMessageListenerContainer;
import org.springframework.jms.listener.AbstractPollingMessageListenerContainer;
import org.springframework.jms.listener.MessageListenerContainer;
import org.springframework.jms.listener.SessionAwareMessageListener;
import org.springframework.util.ErrorHandler;
import org.springframework.util.ReflectionUtils;

/**
 * Spring JMS's containers of {@code @Idempotent} methods. What Idem reads and does:
 *
 * <ul>
 *   <li>a transacted session (Spring Boot's default without JTA): the session commits after the
 *       method returned and rolls back (the broker redelivers) when it threw — allowed; {@code
 *       CLIENT_ACKNOWLEDGE}: acknowledged after the method returned, recovered when it threw —
 *       allowed; {@code AUTO_ACKNOWLEDGE}, {@code DUPS_OK_ACKNOWLEDGE} without a transaction
 *       (acknowledged at receive, before the listener runs, or lazily: Spring's {@code
 *       AbstractMessageListenerContainer} documentation): <em>refused</em>;
 *   <li>a transaction manager on the container ({@code JmsTransactionManager}, JTA): the method
 *       would run inside a Spring transaction Idem does not own — <em>refused</em>;
 *   <li>prefetch (the connection factory's consumer window): not read — Idem's attempts are
 *       handler runs it counts itself ({@link ListenerAttempts}), not {@code JMSXDeliveryCount},
 *       which Artemis raises for prefetched messages on each {@code session.recover()};
 *   <li>the error handler: kept, except that Idem's hand-backs are not logged again (Idem did).
 * </ul>
 */
final class JmsContainers implements ListenerContainers {
  private static final Logger LOG = LoggerFactory.getLogger(JmsContainers.class);

  @Override
  public String kind() {
    return "jms";
  }

  @Override
  public List<Container> find(ApplicationContext context, Resources resources) {
    Set<MessageListenerContainer> all = new LinkedHashSet<>();
    context.getBeansOfType(JmsListenerEndpointRegistry.class, false, false).values()
        .forEach(registry -> all.addAll(registry.getListenerContainers()));
    all.addAll(context.getBeansOfType(MessageListenerContainer.class, false, false).values());
    List<Container> found = new ArrayList<>();
    for (MessageListenerContainer container : all) {
      if (!(container instanceof AbstractMessageListenerContainer jms)) {
        continue;
      }
      Set<Method> methods = new LinkedHashSet<>();
      ListenerMethods.of(jms.getMessageListener()).stream().filter(ListenerContainers::idempotent).forEach(methods::add);
      if (!methods.isEmpty()) {
        found.add(new JmsContainer(jms, methods, resources));
      }
    }
    return found;
  }

  private record JmsContainer(AbstractMessageListenerContainer container, Set<Method> methods, Resources resources)
      implements Container {
    @Override
    public String name() {
      return "JMS container for '" + (container.getDestinationName() != null ? container.getDestinationName()
          : String.valueOf(container.getDestination())) + "'";
    }

    @Override
    public List<String> refusals() {
      List<String> refused = new ArrayList<>();
      if (!container.isSessionTransacted() && container.getSessionAcknowledgeMode() != Session.CLIENT_ACKNOWLEDGE) {
        refused.add(name() + " is not transacted and acknowledges in mode "
            + mode(container.getSessionAcknowledgeMode()) + " (AUTO_ACKNOWLEDGE acks at receive, before"
            + " the listener runs): set sessionTransacted=true (spring.jms.listener.session.transacted=true,"
            + " Spring Boot's default without JTA) or CLIENT_ACKNOWLEDGE"
            + " (spring.jms.listener.session.acknowledge-mode=client)");
      }
      Object manager = transactionManager();
      if (manager != null) {
        refused.add(name() + " has a transaction manager (" + manager.getClass().getName() + "): the"
            + " method would run inside a Spring transaction Idem does not own, and Idem's marker"
            + " would commit only with it; remove it from the container factory and keep"
            + " sessionTransacted=true");
      }
      return refused;
    }

    @Override
    public String settings() {
      return name() + ": " + (container.isSessionTransacted() ? "transacted session"
          : mode(container.getSessionAcknowledgeMode())) + ", attempts counted by Idem (JMSXDeliveryCount not read)";
    }

    private @Nullable Object transactionManager() {
      if (!(container instanceof AbstractPollingMessageListenerContainer)) {
        return null;
      }
      Method getter = ReflectionUtils.findMethod(AbstractPollingMessageListenerContainer.class, "getTransactionManager");
      if (getter == null) {
        return null;
      }
      ReflectionUtils.makeAccessible(getter);
      return ReflectionUtils.invokeMethod(getter, container);
    }

    private static String mode(int mode) {
      return switch (mode) {
        case Session.AUTO_ACKNOWLEDGE -> "AUTO_ACKNOWLEDGE";
        case Session.CLIENT_ACKNOWLEDGE -> "CLIENT_ACKNOWLEDGE";
        case Session.DUPS_OK_ACKNOWLEDGE -> "DUPS_OK_ACKNOWLEDGE";
        default -> String.valueOf(mode);
      };
    }

    @Override
    public void takeOver() {
      Object listener = container.getMessageListener();
      if (listener instanceof Capture || listener == null) {
        return;
      }
      container.setMessageListener(new Capture(listener, methods.iterator().next(), resources.unconvertible()));
      container.setErrorHandler(new QuietHandBacks(container.getErrorHandler()));
    }
  }

  /** Puts the JMS message in {@link CurrentDelivery} around the container's listener. */
  static final class Capture implements SessionAwareMessageListener<Message> {
    private final Object delegate;
    private final Method method;
    private final Unconvertible unconvertible;

    Capture(Object delegate, Method method, Unconvertible unconvertible) {
      this.delegate = delegate;
      this.method = method;
      this.unconvertible = unconvertible;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void onMessage(Message message, Session session) throws JMSException {
      try {
        CurrentDelivery.with("jms", message, null, delivery -> {
          try {
            if (delegate instanceof SessionAwareMessageListener<?> aware) {
              ((SessionAwareMessageListener<Message>) aware).onMessage(message, session);
            } else {
              ((MessageListener) delegate).onMessage(message);
            }
          } catch (RuntimeException e) {
            if (delivery.reached() || !Unconvertible.isConversionFailure(e)) {
              throw e;
            }
            unconvertible.deadLetter(method, message, e);
          }
          return null;
        });
      } catch (JMSException | RuntimeException | Error e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }

  /** The container's error handler (or Spring's WARN), without a second log line for Idem's hand-backs. */
  private record QuietHandBacks(@Nullable ErrorHandler delegate) implements ErrorHandler {
    @Override
    public void handleError(Throwable failure) {
      if (IdempotentRetryException.find(failure) != null) {
        return;
      }
      if (delegate != null) {
        delegate.handleError(failure);
      } else {
        LOG.warn("Execution of JMS message listener failed, and no ErrorHandler has been set.", failure);
      }
    }
  }
}
