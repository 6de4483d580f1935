package io.idem.sqs;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * An {@link SqsClient} handed to a consumer through {@link SqsIdempotentConsumer#create(
 * SqsConsumerConfig, io.idem.IdempotentConsumer, SqsClient)} (the application's own client), which
 * forwards every call to a real client and lets a test see or change some of them — a slow or
 * misbehaving client, not a fake broker.
 */
final class InterceptedSqsClient {

  /** Decides what one call does; {@code real.call()} forwards it unchanged. */
  @FunctionalInterface
  interface Interceptor {
    Object intercept(String method, Object[] args, Forward real) throws Throwable;
  }

  /** The call on the real client. */
  @FunctionalInterface
  interface Forward {
    Object call() throws Throwable;
  }

  private InterceptedSqsClient() {}

  static SqsClient of(SqsClient real, Interceptor interceptor) {
    return (SqsClient) Proxy.newProxyInstance(SqsClient.class.getClassLoader(), new Class<?>[] {SqsClient.class},
        (proxy, method, args) -> {
          Object[] arguments = args == null ? new Object[0] : args;
          Forward forward = () -> {
            try {
              return method.invoke(real, arguments);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
          };
          return interceptor.intercept(method.getName(), arguments, forward);
        });
  }
}
