package io.idem.spring;

import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.test.util.ReflectionTestUtils;
import org.springframework.util.ClassUtils;

/**
 * What the tests name differently on Spring Boot 4.0 (the default build) and 3.5 ({@code -Pboot3}),
 * resolved by name so that one test source serves both: the auto-configuration classes (Boot 4's
 * per-technology modules, e.g. {@code org.springframework.boot.jdbc.autoconfigure}, against 3.5's
 * {@code org.springframework.boot.autoconfigure.jdbc}) and Actuator's health types (Boot 4's
 * {@code spring-boot-health}, 3.5's {@code org.springframework.boot.actuate.health}), whose
 * methods are the same on both.
 */
final class BootLines {
  private BootLines() {}

  /**
   * The auto-configurations {@code Xxx} of the line on the classpath, each given as
   * {@code "boot4.package.Xxx|boot3.package.Xxx"}.
   *
   * @throws IllegalStateException when neither name is on the classpath
   */
  static AutoConfigurations autoConfigurations(String... boot4OrBoot3Names) {
    Class<?>[] classes = new Class<?>[boot4OrBoot3Names.length];
    ClassLoader loader = BootLines.class.getClassLoader();
    for (int i = 0; i < classes.length; i++) {
      String[] names = boot4OrBoot3Names[i].split("\\|");
      String name = ClassUtils.isPresent(names[0], loader) ? names[0] : names[1];
      if (!ClassUtils.isPresent(name, loader)) {
        throw new IllegalStateException("neither " + boot4OrBoot3Names[i] + " is on the classpath");
      }
      classes[i] = ClassUtils.resolveClassName(name, loader);
    }
    return AutoConfigurations.of(classes);
  }

  static final String DATA_SOURCE = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration";
  static final String DATA_SOURCE_TRANSACTION_MANAGER =
      "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration";
  static final String TRANSACTION =
      "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.transaction.TransactionAutoConfiguration";
  static final String JMS = "org.springframework.boot.jms.autoconfigure.JmsAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.jms.JmsAutoConfiguration";
  static final String KAFKA = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.kafka.KafkaAutoConfiguration";
  static final String RABBIT = "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration"
      + "|org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration";

  /** A health reading of either line: its status code and details. */
  record HealthReading(String status, Map<String, Object> details) {}

  /** Reads the indicator {@code name} of a {@code CompositeHealthContributor} of either line. */
  @SuppressWarnings("unchecked")
  static HealthReading health(Object compositeContributor, String name) {
    Object indicator = ReflectionTestUtils.invokeMethod(compositeContributor, "getContributor", name);
    Object health = ReflectionTestUtils.invokeMethod(indicator, "health");
    Object status = ReflectionTestUtils.invokeMethod(health, "getStatus");
    return new HealthReading(ReflectionTestUtils.invokeMethod(status, "getCode"),
        (Map<String, Object>) ReflectionTestUtils.invokeMethod(health, "getDetails"));
  }
}
