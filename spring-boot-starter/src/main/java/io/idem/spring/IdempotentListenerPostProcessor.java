package io.idem.spring;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanInitializationException;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Proxies every bean with an {@link Idempotent} method so that the method runs through {@link
 * IdempotentListenerInterceptor}, and refuses at start-up (a {@link BeanInitializationException}
 * naming the method) an annotated method that cannot be made idempotent. Ordered before the
 * listener annotation processors of Spring Kafka, AMQP and JMS (which register the bean they are
 * given), so they register the proxy.
 *
 * <p>Records the {@code @Idempotent} methods it bound, for {@link IdempotentListenerContainers}.
 * Thread-safe after the context started.
 */
public final class IdempotentListenerPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {
  private static final long serialVersionUID = 1L;

  private transient IdempotentListenerInterceptor interceptor;

  public IdempotentListenerPostProcessor() {
    setProxyTargetClass(true);
    setBeforeExistingAdvisors(true);
    setOrder(Ordered.HIGHEST_PRECEDENCE + 100);
  }

  // each kind is built by its own class, loaded only when its library is present: no lambda here
  // may name a listener library's type (getDeclaredMethods would fail without it)
  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    super.setBeanFactory(beanFactory);
    ClassLoader loader = getClass().getClassLoader();
    List<ListenerDeliveries> kinds = new ArrayList<>();
    if (ClassUtils.isPresent("org.springframework.kafka.core.ProducerFactory", loader)) {
      kinds.add(KafkaDeliveries.of(beanFactory));
    }
    if (ClassUtils.isPresent("org.springframework.amqp.rabbit.core.RabbitTemplate", loader)) {
      kinds.add(RabbitDeliveries.of(beanFactory));
    }
    if (ClassUtils.isPresent("org.springframework.jms.core.JmsTemplate", loader)
        && ClassUtils.isPresent("io.idem.jms.JmsHeaderNames", loader)) {
      kinds.add(JmsDeliveries.of(beanFactory));
    }
    if (ClassUtils.isPresent("io.awspring.cloud.sqs.annotation.SqsListener", loader)) {
      kinds.add(SqsDeliveries.of(beanFactory));
    }
    interceptor = new IdempotentListenerInterceptor(
        () -> beanFactory.getBean(IdemPipelines.class),
        () -> beanFactory.getBean(IdemProperties.class).getConsumerGroup(),
        kinds);
    advisor = new DefaultPointcutAdvisor(
        new AnnotationMatchingPointcut(null, Idempotent.class, true), interceptor);
  }

  /** The advice, with the methods it bound. */
  IdempotentListenerInterceptor interceptor() {
    return interceptor;
  }

  /**
   * The {@code @Idempotent} methods of the context's beans, as {@code SimpleClassName.method}, with
   * their container kind and consumer group, sorted by name.
   */
  Map<String, MethodBinding> listeners() {
    Map<String, MethodBinding> listeners = new java.util.TreeMap<>();
    interceptor.bindings().forEach((method, binding) -> listeners.put(binding.name(), binding));
    return listeners;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    Map<Method, Idempotent> annotated = MethodIntrospector.selectMethods(type,
        (MethodIntrospector.MetadataLookup<Idempotent>) method ->
            AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class));
    for (Method method : annotated.keySet()) {
      try {
        interceptor.bind(method);
      } catch (IllegalStateException e) {
        throw new BeanInitializationException("bean '" + beanName + "': " + e.getMessage(), e);
      }
    }
    return super.postProcessAfterInitialization(bean, beanName);
  }
}
