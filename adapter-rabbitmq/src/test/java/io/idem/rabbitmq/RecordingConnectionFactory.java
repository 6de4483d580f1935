package io.idem.rabbitmq;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.idem.fixtures.RabbitFixture;
import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A connection factory for the fixture's RabbitMQ that records, per connection, the channel
 * operations the adapter makes, and can hold the next {@code newConnection} until released. The
 * adapter copies its factory with {@code clone()}, which keeps the subclass and shares these
 * fields. Test code only; thread-safe.
 */
class RecordingConnectionFactory extends ConnectionFactory {
  /**
   * One channel operation: on which connection (by its name), which method, with which arguments
   * (as passed; empty for none).
   */
  record Op(String connection, int connectionNumber, String method, List<Object> args) {
    /** The {@code index}th argument, e.g. {@code basicAck}'s tag (0) and {@code multiple} (1). */
    Object arg(int index) {
      return args.get(index);
    }
  }

  final List<Op> ops = new CopyOnWriteArrayList<>();
  final List<Connection> connections = new CopyOnWriteArrayList<>();
  private final AtomicReference<CountDownLatch> gate = new AtomicReference<>();
  final CountDownLatch gateReached = new CountDownLatch(1);
  /** Called with the method name after each channel operation returned from the broker client. */
  volatile java.util.function.Consumer<String> afterOperation = method -> {};

  RecordingConnectionFactory() throws Exception {
    setUri(RabbitFixture.shared().uri());
  }

  /**
   * The crash points inside channel calls, for a crash child: once the broker client returned,
   * DURING_ACK after {@code basicAck} (the broker took the ack), DEAD_LETTER_COPY_STORED after a
   * confirm wait (the consumer publishes dead-letter copies only: the copy is confirmed, the
   * original not acked yet).
   */
  RecordingConnectionFactory crashingAt(CrashInjector crashes) {
    afterOperation = method -> {
      switch (method) {
        case "basicAck" -> crashes.atBrokerOperation(CrashPoint.DURING_ACK, method);
        case "waitForConfirmsOrDie", "waitForConfirms" ->
            crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, method);
        default -> { }
      }
    };
    return this;
  }

  /** The next {@code newConnection} waits until the returned latch is counted down. */
  CountDownLatch holdNextConnection() {
    CountDownLatch release = new CountDownLatch(1);
    gate.set(release);
    return release;
  }

  @Override
  public Connection newConnection(String clientProvidedName) throws IOException, TimeoutException {
    CountDownLatch release = gate.getAndSet(null);
    if (release != null) {
      gateReached.countDown();
      try {
        release.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while held", e);
      }
    }
    Connection real = super.newConnection(clientProvidedName);
    int number = connections.size();
    Connection proxy = (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {Connection.class}, (p, method, args) -> {
          Object result = invoke(real, method, args);
          if (method.getName().equals("createChannel") && result != null) {
            return channel((Channel) result, clientProvidedName, number);
          }
          return result;
        });
    connections.add(real);
    return proxy;
  }

  private Channel channel(Channel real, String connection, int number) {
    return (Channel) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Channel.class},
        (p, method, args) -> {
          ops.add(new Op(connection, number, method.getName(),
              args == null ? List.of() : java.util.Collections.unmodifiableList(java.util.Arrays.asList(args.clone()))));
          Object result = invoke(real, method, args);
          afterOperation.accept(method.getName());
          return result;
        });
  }

  /** The operations named {@code method}, in order. */
  List<Op> ops(String method) {
    return ops.stream().filter(op -> op.method().equals(method)).toList();
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
