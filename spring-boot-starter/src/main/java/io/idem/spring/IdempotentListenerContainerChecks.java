package io.idem.spring;

import jakarta.jms.Session;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.ApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.ClassUtils;

/**
 * Refuses, before any listener container starts (a lifecycle phase below theirs), the containers
 * that would acknowledge a message before an {@link Idempotent} method returns — so before Idem's
 * commit — or that run the method inside a transaction Idem does not own. Checked for each kind
 * with at least one {@code @Idempotent} method, on every container of that kind in the context:
 *
 * <ul>
 *   <li>Kafka: a container with a transaction manager (a Kafka or database transaction around
 *       the listener would hold Idem's claim; Spring Kafka then also commits offsets in it).
 *       Every AckMode without a transaction commits offsets after the listener returned: RECORD
 *       after each record, BATCH (default), TIME, COUNT after the poll's records; MANUAL and
 *       MANUAL_IMMEDIATE only when the method acknowledges, which an {@code @Idempotent} method
 *       cannot (an {@code Acknowledgment} parameter is refused);
 *   <li>RabbitMQ: {@code AcknowledgeMode.NONE} (the broker considers the message delivered as it
 *       sends it). AUTO (default) acks after the listener returns; MANUAL only when the method
 *       acks, which it cannot (a {@code Channel} parameter is refused);
 *   <li>JMS: a {@code DefaultMessageListenerContainer} (what {@code @JmsListener} uses) neither
 *       transacted nor in CLIENT_ACKNOWLEDGE mode: in AUTO_ACKNOWLEDGE it acknowledges at receive,
 *       before the listener runs, and in DUPS_OK_ACKNOWLEDGE lazily, possibly before (Spring's
 *       {@code AbstractMessageListenerContainer} documentation). Transacted (Spring Boot's default
 *       for {@code @JmsListener} without JTA) commits the session after the listener returns.
 * </ul>
 *
 * Not thread-safe; called by the context's lifecycle processor.
 */
final class IdempotentListenerContainerChecks implements SmartLifecycle {
  /** Below the listener registries' phases (Kafka MAX_VALUE - 100, AMQP and JMS MAX_VALUE). */
  static final int PHASE = Integer.MAX_VALUE - 1000;

  private final ApplicationContext context;
  private final ObjectProvider<IdempotentListenerPostProcessor> postProcessor;
  private volatile boolean running;

  IdempotentListenerContainerChecks(
      ApplicationContext context, ObjectProvider<IdempotentListenerPostProcessor> postProcessor) {
    this.context = context;
    this.postProcessor = postProcessor;
  }

  @Override
  public void start() {
    IdempotentListenerPostProcessor processor = postProcessor.getIfAvailable();
    List<String> refused = new ArrayList<>();
    if (processor != null) {
      ClassLoader loader = getClass().getClassLoader();
      if (processor.kindsInUse().contains("kafka")
          && ClassUtils.isPresent("org.springframework.kafka.config.KafkaListenerEndpointRegistry", loader)) {
        refused.addAll(Kafka.refused(context));
      }
      if (processor.kindsInUse().contains("rabbitmq")
          && ClassUtils.isPresent("org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry", loader)) {
        refused.addAll(Rabbit.refused(context));
      }
      if (processor.kindsInUse().contains("jms")
          && ClassUtils.isPresent("org.springframework.jms.config.JmsListenerEndpointRegistry", loader)) {
        refused.addAll(Jms.refused(context));
      }
    }
    if (!refused.isEmpty()) {
      throw new IllegalStateException("listener containers that would acknowledge before Idem's"
          + " commit, or run @Idempotent methods in a transaction Idem does not own: "
          + String.join("; ", refused));
    }
    running = true;
  }

  @Override
  public void stop() {
    running = false;
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }

  private static final class Kafka {
    static List<String> refused(ApplicationContext context) {
      List<String> refused = new ArrayList<>();
      context.getBeanProvider(org.springframework.kafka.config.KafkaListenerEndpointRegistry.class)
          .ifAvailable(registry -> registry.getAllListenerContainers().forEach(container -> {
            var properties = container.getContainerProperties();
            if (properties.getKafkaAwareTransactionManager() != null
                || properties.getTransactionManager() != null) {
              refused.add("Kafka container '" + container.getListenerId() + "' has a transaction"
                  + " manager: remove it (Idem opens the database transaction itself)");
            }
          }));
      return refused;
    }
  }

  private static final class Rabbit {
    static List<String> refused(ApplicationContext context) {
      List<String> refused = new ArrayList<>();
      context.getBeanProvider(
              org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry.class)
          .ifAvailable(registry -> registry.getListenerContainers().forEach(container -> {
            if (container instanceof org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer amqp
                && amqp.getAcknowledgeMode() == org.springframework.amqp.core.AcknowledgeMode.NONE) {
              refused.add("RabbitMQ container '" + amqp.getListenerId() + "' has AcknowledgeMode.NONE"
                  + " (the broker drops the message as it delivers it): use AUTO"
                  + " (spring.rabbitmq.listener.simple.acknowledge-mode=auto)");
            }
          }));
      return refused;
    }
  }

  private static final class Jms {
    static List<String> refused(ApplicationContext context) {
      List<String> refused = new ArrayList<>();
      context.getBeanProvider(org.springframework.jms.config.JmsListenerEndpointRegistry.class)
          .ifAvailable(registry -> registry.getListenerContainers().forEach(container -> {
            if (container instanceof org.springframework.jms.listener.DefaultMessageListenerContainer dmlc
                && !dmlc.isSessionTransacted()
                && dmlc.getSessionAcknowledgeMode() != Session.CLIENT_ACKNOWLEDGE) {
              refused.add("JMS container for '" + (dmlc.getDestinationName() != null ? dmlc.getDestinationName() : String.valueOf(dmlc.getDestination())) + "' is not"
                  + " transacted and acknowledges in mode " + dmlc.getSessionAcknowledgeMode()
                  + " (AUTO_ACKNOWLEDGE acks at receive, before the listener runs): set"
                  + " sessionTransacted=true (spring.jms.listener.session.transacted=true, Spring"
                  + " Boot's default without JTA)");
            }
          }));
      return refused;
    }
  }
}
