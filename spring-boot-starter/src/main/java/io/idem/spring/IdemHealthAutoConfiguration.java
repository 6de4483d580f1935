package io.idem.spring;

import java.util.List;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportSelector;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.util.ClassUtils;

/**
 * Idem's Actuator health indicators — one per {@code idem.consumers.<name>}, and {@code
 * idemOutboxRelay} — after {@link IdemAutoConfiguration}, so that their conditions see its beans.
 * Imports the registration this jar was compiled with: {@link IdemConsumersHealth}'s on Spring
 * Boot 4's health API or, built with {@code -Pboot3}, {@code Boot3ConsumersHealth}'s on Spring
 * Boot 3.5's; each backs off when its line's health classes are not on the classpath.
 */
@AutoConfiguration(after = IdemAutoConfiguration.class)
@ConditionalOnProperty(prefix = "idem", name = "enabled", matchIfMissing = true)
@Import(IdemHealthAutoConfiguration.Registrations.class)
public class IdemHealthAutoConfiguration {

  static final class Registrations implements ImportSelector {
    private static final List<String> REGISTRATIONS = List.of(
        "io.idem.spring.IdemConsumersHealth$Registration",
        "io.idem.spring.Boot3ConsumersHealth$Registration");

    @Override
    public String[] selectImports(AnnotationMetadata metadata) {
      ClassLoader loader = Registrations.class.getClassLoader();
      return REGISTRATIONS.stream()
          .filter(registration -> ClassUtils.isPresent(registration, loader))
          .toArray(String[]::new);
    }
  }
}
