package io.idem.spring;

import io.idem.IdempotencyKey;
import io.idem.IdempotencyListener;
import io.idem.InboundMessage;
import io.idem.ProcessingOutcome;
import io.idem.testkit.CrashInjector;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * The victim of {@link SpringListenerCrashIT}, run in a child JVM: a Spring Boot application with
 * one {@code @Idempotent} listener ({@code @KafkaListener} with Spring Kafka's default AckMode
 * BATCH, {@code @RabbitListener} with AcknowledgeMode AUTO, {@code @JmsListener} on Spring Boot's
 * transacted container, or Spring Cloud AWS's {@code @SqsListener} in ON_SUCCESS mode) that inserts one row per event
 * into {@code effects} with the application's {@code JdbcTemplate}. Its pipeline's listener is
 * {@link CrashInjector#fromSystemProperties()}: with {@code idem.crash.point=AFTER_COMMIT} it halts
 * the JVM after Idem's commit, inside the listener method, so before the container acknowledges.
 * It prints {@code IDEM-OUTCOME <outcome> <key>} for each message Idem settled.
 *
 * <p>System properties: {@code test.broker} ({@code kafka}, {@code kafka-batch} — a batch
 * listener —, {@code rabbitmq}, {@code jms}, {@code sqs}), {@code test.artemis.url} (JMS), {@code
 * test.source} (topic or queue), {@code test.handler-delay} (a pause in the handler, ms, to leave
 * a SIGKILL time to land mid-stream; default 0), Spring Boot's {@code spring.datasource.*},
 * {@code spring.kafka.*}, {@code spring.rabbitmq.*}, and {@code idem.crash.*}.
 */
public final class SpringCrashChild {
  private SpringCrashChild() {}

  public static void main(String[] args) {
    Class<?> app = switch (System.getProperty("test.broker", "")) {
      case "kafka" -> KafkaApp.class;
      case "kafka-batch" -> KafkaBatchApp.class;
      case "rabbitmq" -> RabbitApp.class;
      case "jms" -> JmsApp.class;
      case "sqs" -> SqsApp.class;
      default -> throw new IllegalArgumentException("test.broker must be kafka, kafka-batch, rabbitmq, jms or sqs");
    };
    SpringApplication application = new SpringApplication(app);
    application.setBannerMode(Banner.Mode.OFF);
    application.run(args);
    System.out.println("CHILD-STARTED");
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Effects.class, KafkaEffects.class})
  static class KafkaApp {}

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Effects.class, KafkaBatchEffects.class})
  static class KafkaBatchApp {}

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Effects.class, RabbitEffects.class})
  static class RabbitApp {}

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Effects.class, JmsEffects.class})
  static class JmsApp {
    /** The parent's embedded Artemis, over TCP. */
    @Bean
    jakarta.jms.ConnectionFactory connectionFactory(@Value("${test.artemis.url}") String url,
        @Value("${test.artemis.user:}") String user, @Value("${test.artemis.password:}") String password) {
      return new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(url,
          user.isEmpty() ? null : user, password.isEmpty() ? null : password);
    }
  }

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import({Effects.class, SqsEffects.class})
  static class SqsApp {}

  /** The business write and the crash injector, shared by the applications. */
  static class Effects {
    @Autowired JdbcTemplate jdbc;
    @Value("${test.handler-delay:0}") long delayMillis;

    @Bean
    IdemListenerFactory crashingListener() {
      IdempotencyListener crashes = CrashInjector.fromSystemProperties();
      IdempotencyListener printing = new PrintingListener(crashes);
      return group -> printing;
    }

    @Value("${test.poison:}") String poison;

    void apply(String key) {
      if (key.equals(poison)) {
        Runtime.getRuntime().halt(3); // a message that kills the process, every time
      }
      jdbc.update("INSERT INTO effects (id) VALUES (?)", key);
      if (delayMillis > 0) {
        try {
          Thread.sleep(delayMillis); // pacing only: a SIGKILL finds the stream half done
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted", e);
        }
      }
    }
  }

  static class KafkaEffects {
    @Autowired Effects effects;

    @KafkaListener(topics = "${test.source}", groupId = "${test.source}-app")
    @Idempotent(consumerGroup = "crash")
    public void onEvent(ConsumerRecord<String, String> record) {
      effects.apply(record.key());
    }
  }

  /** A batch listener: the poll's records of a partition in one call (Idem's batch mode). */
  static class KafkaBatchEffects {
    @Autowired Effects effects;

    @KafkaListener(topics = "${test.source}", groupId = "${test.source}-app", batch = "true")
    @Idempotent(consumerGroup = "crash")
    public void onEvents(java.util.List<ConsumerRecord<String, String>> records) {
      records.forEach(record -> effects.apply(record.key()));
    }
  }

  static class RabbitEffects {
    @Autowired Effects effects;

    @RabbitListener(queues = "${test.source}")
    @Idempotent(consumerGroup = "crash")
    public void onEvent(Message message) {
      effects.apply(new String(message.getBody(), StandardCharsets.UTF_8));
    }
  }

  /** Spring Boot's transacted JMS listener container; the converted body, as Spring users write it. */
  static class JmsEffects {
    @Autowired Effects effects;

    @org.springframework.jms.annotation.JmsListener(destination = "${test.source}")
    @Idempotent(consumerGroup = "crash")
    public void onEvent(@org.springframework.messaging.handler.annotation.Payload String body) {
      effects.apply(body);
    }
  }

  /** Spring Cloud AWS's container (ON_SUCCESS); a failed or unsettled message is back after 3 s. */
  static class SqsEffects {
    @Autowired Effects effects;

    @io.awspring.cloud.sqs.annotation.SqsListener(value = "${test.source}", messageVisibilitySeconds = "3",
        pollTimeoutSeconds = "1")
    @Idempotent(consumerGroup = "crash")
    public void onEvent(@org.springframework.messaging.handler.annotation.Payload String body) {
      effects.apply(body);
    }
  }

  /** The crash injector, and a line on stdout per settled message for the parent to read. */
  private static final class PrintingListener implements IdempotencyListener {
    private final IdempotencyListener crashes;

    PrintingListener(IdempotencyListener crashes) {
      this.crashes = crashes;
    }

    @Override
    public void beforeClaim(InboundMessage message, IdempotencyKey key) {
      crashes.beforeClaim(message, key);
    }

    @Override
    public void afterHandler(InboundMessage message, IdempotencyKey key) {
      crashes.afterHandler(message, key);
    }

    @Override
    public void afterCommit(InboundMessage message, IdempotencyKey key, ProcessingOutcome pending) {
      crashes.afterCommit(message, key, pending);
    }

    @Override
    public void onOutcome(InboundMessage message, @Nullable IdempotencyKey key,
        ProcessingOutcome outcome, Duration elapsed) {
      System.out.println("IDEM-OUTCOME " + outcome + " " + (key == null ? "-" : key.value()));
    }
  }
}
