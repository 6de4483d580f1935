package io.idem.store.jdbc;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.apache.ibatis.builder.xml.XMLMapperBuilder;
import org.apache.ibatis.session.Configuration;

/**
 * The store's MyBatis statements for one table: the mapper template of this jar, with the
 * namespace and table filled in, registered in the application's {@link Configuration}; and the
 * reading of this jar's resources (the template, and the schema script {@link
 * ProcessedEventsSchema} applies).
 */
final class ProcessedEventsMapper {
  private static final String MAPPER_TEMPLATE = "io/idem/store/jdbc/ProcessedEventMapper.xml";
  /** The attempts table's statements ({@code V4__processed_events_attempts.sql}). */
  static final String ATTEMPT_TEMPLATE = "io/idem/store/jdbc/AttemptMapper.xml";

  private ProcessedEventsMapper() {}

  /**
   * The namespace of {@code table}'s statements, registered in {@code configuration} unless they
   * already are: one namespace per table, registered once per Configuration.
   */
  static String register(Configuration configuration, TableName table) {
    return register(configuration, MAPPER_TEMPLATE, "io.idem.store.jdbc.ProcessedEvents.", table, "claim");
  }

  /**
   * Registers the mapper {@code template} of this jar for {@code table} under the namespace
   * {@code prefix + table} unless its statement {@code probe} already is (the outbox's statements
   * use this too); returns the namespace.
   */
  static String register(
      Configuration configuration, String template, String prefix, TableName table, String probe) {
    String namespace = prefix + table.qualified();
    synchronized (configuration) {
      if (configuration.hasStatement(namespace + "." + probe, false)) {
        return namespace;
      }
      String xml = readResource(template)
          .replace("__NAMESPACE__", namespace)
          .replace("__TABLE__", table.qualified());
      InputStream in = new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8));
      new XMLMapperBuilder(in, configuration, template + "#" + table.qualified(),
              configuration.getSqlFragments())
          .parse();
    }
    return namespace;
  }

  /** The UTF-8 text of {@code name} on this jar's class path. */
  static String readResource(String name) {
    try (InputStream in = ProcessedEventsMapper.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource " + name + " is missing from idem-store-jdbc");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("could not read " + name, e);
    }
  }
}
