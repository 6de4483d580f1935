package io.idem.testkit;

import io.idem.BrokerConsumer;
import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The crash matrix's child JVM: {@code java -cp <the test's classpath> io.idem.testkit.CrashMatrixChild
 * <factory class>} with the point's settings as {@code -Didem.crashmatrix.*} system properties
 * and the crash settings as {@code -Didem.crash.*} ({@link CrashInjector#fromSystemProperties}).
 * It instantiates the {@link CrashMatrixConsumerFactory}, starts the consumer, prints {@value
 * #READY}, and runs until its standard input ends (the parent closes it to stop the child, and a
 * dead parent closes it too); then it closes the consumer gracefully and exits with status 0.
 * Exit status 2: the factory or the consumer failed (printed). A planned crash exits with {@link
 * CrashInjector#EXIT_STATUS}. Started by {@link CrashMatrix}; not meant to be started by hand.
 */
public final class CrashMatrixChild {
  /** Printed once the factory returned the started consumer: {@value}. */
  public static final String READY = "IDEM-CRASH-MATRIX-READY";
  /** Prefix of the line printed per outcome: {@value} {@code <key> <outcome>}. */
  public static final String OUTCOME = "IDEM-OUTCOME";
  /** Prefix of the line printed per stored dead-letter copy: {@value} {@code <key> <cause>}. */
  public static final String DEAD_LETTER = "IDEM-DEAD-LETTER";
  /** Printed after the consumer was closed on request: {@value}. */
  public static final String CLOSED = "IDEM-CRASH-MATRIX-CLOSED";

  static final String PREFIX = "idem.crashmatrix.";
  static final String PROPERTY_PREFIX = PREFIX + "property.";

  private CrashMatrixChild() {}

  /** {@code args[0]}: the factory's class name. */
  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: CrashMatrixChild <CrashMatrixConsumerFactory class>");
      Runtime.getRuntime().halt(2);
    }
    CrashMatrixContext context = null;
    BrokerConsumer consumer = null;
    try {
      Map<String, String> properties = new LinkedHashMap<>();
      System.getProperties().stringPropertyNames().stream()
          .filter(n -> n.startsWith(PROPERTY_PREFIX)).sorted()
          .forEach(n -> properties.put(n.substring(PROPERTY_PREFIX.length()), System.getProperty(n)));
      String url = System.getProperty(PREFIX + "jdbc.url", "");
      CrashMatrix.Jdbc jdbc = url.isEmpty() ? null : new CrashMatrix.Jdbc(url,
          System.getProperty(PREFIX + "jdbc.user", ""), System.getProperty(PREFIX + "jdbc.password", ""),
          System.getProperty(PREFIX + "jdbc.schema", ""));
      context = new CrashMatrixContext(required("point"), required("destination"), required("group"),
          required("run"), Integer.parseInt(required("max-attempts")), properties,
          CrashInjector.fromSystemProperties(), jdbc);
      CrashMatrixConsumerFactory factory = (CrashMatrixConsumerFactory) Class.forName(args[0])
          .getDeclaredConstructor().newInstance();
      consumer = factory.start(context);
      print(READY);
      awaitEndOfInput(System.in);
      consumer.close();
      print(CLOSED);
      context.close();
      System.out.flush();
      System.exit(0);
    } catch (Throwable t) {
      System.out.println("IDEM-CRASH-MATRIX-FAILED " + t);
      t.printStackTrace(System.out);
      System.out.flush();
      Runtime.getRuntime().halt(2);
    }
  }

  private static void awaitEndOfInput(InputStream in) throws IOException {
    byte[] buffer = new byte[64];
    while (in.read(buffer) >= 0) {
      // anything the parent writes is ignored; only the end counts
    }
  }

  private static String required(String name) {
    String value = System.getProperty(PREFIX + name);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("system property " + PREFIX + name + " must be set");
    }
    return value;
  }

  /** One line on stdout, flushed at once (the next moment may be a halt). */
  static void print(String line) {
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }
}
