package io.idem.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.context.properties.ConfigurationPropertiesBean;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.handler.NoUnboundElementsBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.UnboundElementsSourceFilter;
import org.springframework.context.ApplicationContext;

/**
 * Fails start-up on a property under {@code idem.} that no Idem class binds — {@code
 * idem.retry.max-attemps}, say — as Spring Boot does for a {@code @ConfigurationProperties} class
 * with {@code ignoreUnknownFields = false}, naming the property and where it was set. Sub-trees
 * bound by other {@code @ConfigurationProperties} beans under {@code idem.} (other Idem modules'
 * settings) are theirs to check, and a property declared in a configuration metadata file on the
 * classpath ({@code META-INF/spring-configuration-metadata.json}, {@code
 * additional-spring-configuration-metadata.json}: one read from the {@code Environment}, such as
 * {@code idem.dead-letters.endpoint.enabled}) is known; environment variables and system properties are not checked
 * (Spring Boot's {@link UnboundElementsSourceFilter}: {@code IDEM_POSTGRES_URL} is a test fixture's,
 * not a setting). Runs once, after every singleton was created.
 */
final class IdemPropertiesCheck implements SmartInitializingSingleton {
  private final ApplicationContext context;

  IdemPropertiesCheck(ApplicationContext context) {
    this.context = context;
  }

  @Override
  public void afterSingletonsInstantiated() {
    ConfigurationPropertyName root = ConfigurationPropertyName.of("idem");
    List<ConfigurationPropertyName> others = new ArrayList<>();
    ConfigurationPropertiesBean.getAll(context).values().forEach(bean -> {
      String prefix = bean.getAnnotation().prefix();
      if (!prefix.isEmpty() && !prefix.equals("idem")) {
        ConfigurationPropertyName name = ConfigurationPropertyName.adapt(prefix, '.');
        if (root.isAncestorOf(name)) {
          others.add(name);
        }
      }
    });
    try {
      Binder.get(context.getEnvironment()).bind(root, Bindable.ofInstance(new IdemProperties()),
          new NoUnboundElementsBindHandler(BindHandler.DEFAULT, new UnboundElementsSourceFilter()));
    } catch (BindException e) {
      if (!(e.getCause() instanceof UnboundConfigurationPropertiesException unbound)) {
        return; // a value that does not convert: Spring Boot's own binding of IdemProperties reports it
      }
      List<String> unknown = new ArrayList<>();
      Set<ConfigurationProperty> properties = unbound.getUnboundProperties();
      Set<ConfigurationPropertyName> declared = declaredInMetadata();
      for (ConfigurationProperty property : properties) {
        ConfigurationPropertyName name = property.getName();
        if (!declared.contains(name)
            && others.stream().noneMatch(other -> other.equals(name) || other.isAncestorOf(name))) {
          unknown.add(name + (property.getOrigin() == null ? "" : " (" + property.getOrigin() + ")"));
        }
      }
      if (!unknown.isEmpty()) {
        throw new IllegalStateException("Idem: unknown properties under idem.*: " + String.join(", ", unknown)
            + "; docs/SPRING-BOOT.md lists Idem's properties (a typo? idem.enabled=false turns Idem off)");
      }
    }
  }

  /** The {@code idem.*} property names of every configuration metadata file on the classpath. */
  private Set<ConfigurationPropertyName> declaredInMetadata() {
    Set<ConfigurationPropertyName> names = new java.util.HashSet<>();
    com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
    ClassLoader loader = context.getClassLoader() != null ? context.getClassLoader() : getClass().getClassLoader();
    for (String resource : List.of("META-INF/spring-configuration-metadata.json",
        "META-INF/additional-spring-configuration-metadata.json")) {
      try {
        java.util.Enumeration<java.net.URL> urls = loader.getResources(resource);
        while (urls.hasMoreElements()) {
          try (java.io.InputStream in = urls.nextElement().openStream()) {
            for (com.fasterxml.jackson.databind.JsonNode property : json.readTree(in).path("properties")) {
              String name = property.path("name").asText("");
              if (name.startsWith("idem.") && ConfigurationPropertyName.isValid(name)) {
                names.add(ConfigurationPropertyName.of(name));
              }
            }
          }
        }
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException("could not read " + resource, e);
      }
    }
    return names;
  }
}
