package io.idem.spring;

import io.idem.spi.RedeliveryHorizon;
import io.idem.store.jdbc.RetentionJob;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.ApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.util.ClassUtils;

/**
 * Before any listener container starts (a lifecycle phase below theirs), makes sure no container
 * setting can make Idem lose a message or acknowledge one before Idem's commit, and takes over the
 * containers that call {@link Idempotent} methods:
 *
 * <ol>
 *   <li>every {@code @Idempotent} method needs Idem's store: when the application has none (no
 *       {@code DataSource}), start-up fails naming the methods and what is missing;
 *   <li>each {@code @Idempotent} method must be called by a listener container Idem found (a
 *       {@code @KafkaListener} without {@code @EnableKafka}, say, is refused rather than left
 *       inert);
 *   <li>each such container's effective settings are read (the kind's {@link ListenerContainers}:
 *       Kafka's error handler and back-off, AckMode, auto-commit; SQS's acknowledgement mode;
 *       AMQP's AcknowledgeMode, requeue and retry advice; JMS's session mode and transaction
 *       manager) and either owned by Idem or refused, with a message naming the container, the
 *       setting and the fix — all refusals at once;
 *   <li>each container's listener is wrapped so that the delivery reaches the method's
 *       interceptor ({@link CurrentDelivery}) and its error handling hands Idem's retries back to
 *       the broker; the settings are logged at INFO, one line per container.
 * </ol>
 *
 * Not thread-safe; called by the context's lifecycle processor.
 */
final class IdempotentListenerContainers implements SmartLifecycle, org.springframework.beans.factory.DisposableBean {
  /** Below the listener registries' phases (Kafka MAX_VALUE - 100, AMQP, JMS and SQS MAX_VALUE). */
  static final int PHASE = Integer.MAX_VALUE - 1000;
  private static final Logger LOG = LoggerFactory.getLogger(IdempotentListenerContainers.class);

  private final ApplicationContext context;
  private final ObjectProvider<IdempotentListenerPostProcessor> postProcessor;
  private final ObjectProvider<IdemPipelines> pipelines;
  private volatile boolean running;
  /**
   * Resumes the Kafka partitions Idem paused; lives as long as the context (not stopped with the
   * lifecycle: a context stopped and started again keeps its taken-over containers).
   */
  private final ScheduledExecutorService resumes = Executors.newSingleThreadScheduledExecutor(runnable -> {
    Thread thread = new Thread(runnable, "idem-kafka-resume");
    thread.setDaemon(true);
    return thread;
  });

  IdempotentListenerContainers(ApplicationContext context,
      ObjectProvider<IdempotentListenerPostProcessor> postProcessor, ObjectProvider<IdemPipelines> pipelines) {
    this.context = context;
    this.postProcessor = postProcessor;
    this.pipelines = pipelines;
  }

  @Override
  public void start() {
    IdempotentListenerPostProcessor processor = postProcessor.getIfAvailable();
    Map<Method, MethodBinding> bindings = processor == null ? Map.of() : processor.interceptor().bindings();
    if (bindings.isEmpty()) {
      running = true;
      return;
    }
    List<String> names = bindings.values().stream().map(MethodBinding::name).sorted().toList();
    if (pipelines.getIfAvailable() == null) {
      throw new IllegalStateException("Idem: the @Idempotent listener methods " + names + " need Idem's"
          + " processed-events store, but the application has no DataSource bean: add"
          + " spring-boot-starter-jdbc (or -data-jpa) with spring.datasource.url, or turn Idem off"
          + " with idem.enabled=false");
    }
    ListenerContainers.Resources resources = new ListenerContainers.Resources() {
      @Override
      public ScheduledExecutorService scheduler() {
        return resumes;
      }

      @Override
      public Unconvertible unconvertible() {
        return processor.interceptor();
      }
    };
    List<ListenerContainers.Container> containers = new ArrayList<>();
    for (ListenerContainers kind : kinds()) {
      containers.addAll(kind.find(context, resources));
    }
    List<String> refused = new ArrayList<>();
    Set<Method> called = new LinkedHashSet<>();
    for (ListenerContainers.Container container : containers) {
      refused.addAll(container.refusals());
      container.methods().forEach(method -> called.add(processor.interceptor().bind(method).method()));
    }
    for (MethodBinding binding : bindings.values()) {
      if (!called.contains(binding.method()) && called.stream().noneMatch(m -> sameMethod(m, binding.method()))) {
        refused.add(binding.name() + " is @Idempotent, but no " + binding.kind().kind() + " listener"
            + " container calls it: is listener annotation processing on (@EnableKafka, @EnableRabbit,"
            + " @EnableJms, Spring Boot's auto-configuration for the broker), and is the method a"
            + " listener of a container in this application context?");
      }
    }
    if (!refused.isEmpty()) {
      throw new IllegalStateException("Idem: listener containers of @Idempotent methods that could"
          + " lose a message or acknowledge it before Idem's commit: " + String.join("; ", refused));
    }
    checkRetentionWindow(containers);
    for (ListenerContainers.Container container : containers) {
      container.takeOver();
      LOG.info("Idem owns {}", container.settings());
    }
    running = true;
  }

  /**
   * The starter's own {@code RetentionJob} is built before the listeners are known, without
   * horizons: here its window ({@code idem.retention.retention}) is checked against the horizons of
   * the {@code @Idempotent} listeners' sources, by store-jdbc's rule ({@link
   * RetentionJob#checkWindow}), and start-up fails when a marker could be purged before its
   * message's last redelivery. A horizon that cannot be read (the broker down at start-up) is
   * logged at WARN and not checked: listener containers start without their broker too. A {@code
   * RetentionJob} bean of the application's own is left alone: it declares its horizons itself.
   */
  private void checkRetentionWindow(List<ListenerContainers.Container> containers) {
    IdemProperties properties = context.getBeanProvider(IdemProperties.class).getIfAvailable();
    RetentionJob job = context.getBeanProvider(RetentionJob.class).getIfAvailable();
    if (properties == null || job == null || !properties.getRetention().isEnabled() || !job.horizons().isEmpty()) {
      return;
    }
    List<String> unreadable = new ArrayList<>();
    List<RedeliveryHorizon> horizons = new ArrayList<>();
    for (ListenerContainers.Container container : containers) {
      container.horizons(unreadable).forEach(h -> horizons.add(() -> h));
    }
    for (String source : unreadable) {
      LOG.warn("Idem: the redelivery horizon of {} could not be read, so idem.retention.retention {} is not"
          + " checked against it", source, properties.getRetention().getRetention());
    }
    if (horizons.isEmpty()) {
      return;
    }
    try {
      List<RedeliveryHorizon.Horizon> read = RetentionJob.checkWindow(properties.getRetention().getRetention(),
          horizons, properties.getRetention().isAcceptReplaysBeyondWindow());
      LOG.info("Idem: idem.retention.retention {} is longer than the redelivery horizons of the @Idempotent"
          + " listeners' sources {}", properties.getRetention().getRetention(), read);
    } catch (IllegalStateException e) {
      throw new IllegalStateException("Idem: idem.retention.retention does not outlive the redelivery of an"
          + " @Idempotent listener's messages: " + e.getMessage() + " (set idem.retention.retention, or"
          + " idem.retention.accept-replays-beyond-window=true for an unbounded source)", e);
    }
  }

  private static boolean sameMethod(Method a, Method b) {
    return a.getName().equals(b.getName()) && java.util.Arrays.equals(a.getParameterTypes(), b.getParameterTypes())
        && (a.getDeclaringClass().isAssignableFrom(b.getDeclaringClass())
            || b.getDeclaringClass().isAssignableFrom(a.getDeclaringClass()));
  }

  /** The container kinds whose libraries are on the classpath; each loaded only then. */
  private static List<ListenerContainers> kinds() {
    ClassLoader loader = IdempotentListenerContainers.class.getClassLoader();
    List<ListenerContainers> kinds = new ArrayList<>();
    if (ClassUtils.isPresent("org.springframework.kafka.config.KafkaListenerEndpointRegistry", loader)) {
      kinds.add(new KafkaContainers());
    }
    if (ClassUtils.isPresent("org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry", loader)) {
      kinds.add(new RabbitContainers());
    }
    if (ClassUtils.isPresent("org.springframework.jms.config.JmsListenerEndpointRegistry", loader)
        && ClassUtils.isPresent("jakarta.jms.Session", loader)) {
      kinds.add(new JmsContainers());
    }
    if (ClassUtils.isPresent("io.awspring.cloud.sqs.listener.MessageListenerContainerRegistry", loader)) {
      kinds.add(new SqsContainers());
    }
    return kinds;
  }

  @Override
  public void stop() {
    running = false;
  }

  @Override
  public void destroy() {
    resumes.shutdownNow();
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  @Override
  public int getPhase() {
    return PHASE;
  }
}
