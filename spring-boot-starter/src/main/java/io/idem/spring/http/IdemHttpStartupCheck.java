package io.idem.spring.http;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpEntity;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.web.bind.annotation.ResponseBody;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/**
 * The starter's "never inert" rule for HTTP: once every singleton exists, an application with an
 * {@link IdempotentRequest} method or an {@code idem.http.webhooks.*} entry but no {@link IdemHttp}
 * (no store could be built) fails to start, naming what is missing — it never serves those
 * endpoints without Idem. It also refuses an {@link IdempotentRequest} method whose answer is not
 * its response body.
 */
final class IdemHttpStartupCheck implements SmartInitializingSingleton {
  private final ListableBeanFactory beans;
  private final Environment environment;
  private final IdemHttpProperties properties;

  IdemHttpStartupCheck(ListableBeanFactory beans, Environment environment, IdemHttpProperties properties) {
    this.beans = beans;
    this.environment = environment;
    this.properties = properties;
  }

  @Override
  public void afterSingletonsInstantiated() {
    List<HandlerMethod> annotated = new ArrayList<>();
    for (RequestMappingHandlerMapping mapping : beans.getBeansOfType(RequestMappingHandlerMapping.class).values()) {
      mapping.getHandlerMethods().values().stream()
          .filter(method -> method.hasMethodAnnotation(IdempotentRequest.class))
          .forEach(annotated::add);
    }
    for (HandlerMethod method : annotated) {
      if (!answersWithBody(method)) {
        throw new IllegalStateException("@IdempotentRequest method " + method + " must answer with its"
            + " response body (@ResponseBody, @RestController, or a ResponseEntity return type): a view"
            + " rendered after the method would be outside Idem's transaction and not stored");
      }
    }
    if (annotated.isEmpty() && properties.getWebhooks().isEmpty()) {
      return;
    }
    if (beans.getBeanNamesForType(IdemHttp.class).length > 0) {
      return;
    }
    String what = annotated.isEmpty()
        ? "idem.http.webhooks." + properties.getWebhooks().keySet()
        : annotated.size() + " @IdempotentRequest method(s) (" + annotated.get(0) + (annotated.size() > 1 ? ", …" : "") + ")";
    throw new IllegalStateException("Idem cannot serve " + what + ": no Idem store could be built ("
        + missing() + "). Without it the endpoints would run without idempotency; refusing to start");
  }

  private String missing() {
    List<String> reasons = new ArrayList<>();
    if ("false".equalsIgnoreCase(environment.getProperty("idem.enabled"))) {
      reasons.add("idem.enabled=false");
    }
    if (beans.getBeanNamesForType(DataSource.class).length == 0) {
      reasons.add("no DataSource bean: add spring-boot-starter-jdbc and spring.datasource.*");
    }
    if (beans.getBeanNamesForType(PlatformTransactionManager.class).length == 0) {
      reasons.add("no PlatformTransactionManager bean");
    }
    if (reasons.isEmpty()) {
      reasons.add("no SpringTransactionStore bean; is idem-store-jdbc on the classpath?");
    }
    return String.join("; ", reasons);
  }

  private static boolean answersWithBody(HandlerMethod method) {
    Method m = method.getMethod();
    return AnnotatedElementUtils.hasAnnotation(m, ResponseBody.class)
        || AnnotatedElementUtils.hasAnnotation(method.getBeanType(), ResponseBody.class)
        || HttpEntity.class.isAssignableFrom(m.getReturnType());
  }
}
