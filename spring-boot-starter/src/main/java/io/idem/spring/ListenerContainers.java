package io.idem.spring;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Set;
import org.springframework.context.ApplicationContext;

/**
 * One kind of Spring listener container, as {@link IdempotentListenerContainers} sees it at
 * start-up: its containers that call {@link Idempotent} methods, the settings under which one
 * would lose a message or acknowledge it before Idem's commit (refused), and how Idem takes one
 * over (its listener wrapped so that the delivery is captured for the method, its error handling
 * made to hand Idem's retries back to the broker). One implementation per kind, loaded only when
 * its library is on the classpath.
 */
interface ListenerContainers {

  /** {@code kafka}, {@code rabbitmq}, {@code jms}, {@code sqs}. */
  String kind();

  /** The context's containers of this kind that call at least one {@code @Idempotent} method. */
  List<Container> find(ApplicationContext context, Resources resources);

  /**
   * What taking a container over may use: a scheduler for Kafka's partition pauses, and where
   * deliveries the container could not convert for the method go.
   */
  interface Resources {
    java.util.concurrent.ScheduledExecutorService scheduler();

    Unconvertible unconvertible();
  }

  /** One container running {@code @Idempotent} methods. */
  interface Container {
    /** How the container is named in messages: its kind, id and source. */
    String name();

    /** The {@code @Idempotent} methods it calls. */
    Set<Method> methods();

    /**
     * Why Idem cannot run there, each naming the setting, its value and the fix; empty when it can.
     */
    List<String> refusals();

    /** The effective settings Idem read and what it does about them, for the start-up log. */
    String settings();

    /** Wraps the container's listener (and error handling) before it starts. */
    void takeOver();

    /**
     * The redelivery horizons of the container's sources, read now (Kafka: each topic's {@code
     * retention.ms} + {@code segment.ms} + the broker's check interval, {@code
     * KafkaRedeliveryHorizon}); empty where the broker cannot be asked (RabbitMQ, JMS) or the
     * source is a pattern. A source whose horizon could not be read is named in {@code
     * unreadable}.
     */
    default List<io.idem.spi.RedeliveryHorizon.Horizon> horizons(List<String> unreadable) {
      return List.of();
    }
  }

  /** Whether {@code method} is {@code @Idempotent}. */
  static boolean idempotent(Method method) {
    return org.springframework.core.annotation.AnnotatedElementUtils.hasAnnotation(method, Idempotent.class);
  }
}
