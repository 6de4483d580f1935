package io.idem.store.jdbc;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerException;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.ibatis.builder.xml.XMLMapperBuilder;
import org.apache.ibatis.session.Configuration;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.InputSource;
import org.xml.sax.SAXException;

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
    return register(configuration, table, Dialect.POSTGRESQL);
  }

  /** {@link #register(Configuration, TableName)} with the statements of {@code dialect}. */
  static String register(Configuration configuration, TableName table, Dialect dialect) {
    return register(configuration, MAPPER_TEMPLATE, "io.idem.store.jdbc.ProcessedEvents.", table,
        "claim", dialect);
  }

  /**
   * Registers the mapper {@code template} of this jar for {@code table} under the namespace
   * {@code prefix + table} unless its statement {@code probe} already is (the outbox's statements
   * use this too); returns the namespace.
   */
  static String register(
      Configuration configuration, String template, String prefix, TableName table, String probe) {
    return register(configuration, template, prefix, table, probe, Dialect.POSTGRESQL);
  }

  /**
   * Registers the mapper {@code template} with the statements of {@code dialect}, chosen by MyBatis'
   * own {@code databaseId} rule ({@link #forDatabase}) without touching the application's {@link
   * Configuration#getDatabaseId()}: the store's statements are chosen by the database the store
   * detected, the application's by its own {@code databaseIdProvider}, if any.
   */
  static String register(Configuration configuration, String template, String prefix,
      TableName table, String probe, Dialect dialect) {
    String namespace = prefix + table.qualified();
    synchronized (configuration) {
      if (configuration.hasStatement(namespace + "." + probe, false)) {
        return namespace;
      }
      String xml = forDatabase(readResource(template), dialect.databaseId())
          .replace("__NAMESPACE__", namespace)
          .replace("__TABLE__", table.qualified());
      InputStream in = new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8));
      new XMLMapperBuilder(in, configuration, template + "#" + table.qualified(),
              configuration.getSqlFragments())
          .parse();
    }
    return namespace;
  }

  /**
   * The mapper {@code xml} as MyBatis parses it for a configuration whose {@code databaseId} is
   * {@code databaseId}: a statement marked with that {@code databaseId} is kept (unmarked) and
   * replaces an unmarked one of the same id; one marked with another {@code databaseId} is dropped;
   * unmarked statements and every other element stay. The DOCTYPE is kept (MyBatis validates).
   */
  static String forDatabase(String xml, String databaseId) {
    if (!xml.contains("databaseId=")) {
      return xml; // nothing to choose (the outbox's mapper): the text as it is
    }
    try {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      factory.setValidating(false);
      factory.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
      factory.setFeature("http://xml.org/sax/features/external-general-entities", false);
      Document document = factory.newDocumentBuilder().parse(new InputSource(new StringReader(xml)));
      Element mapper = document.getDocumentElement();
      List<Element> statements = new ArrayList<>();
      for (Node n = mapper.getFirstChild(); n != null; n = n.getNextSibling()) {
        if (n instanceof Element e && e.hasAttribute("id")
            && List.of("select", "insert", "update", "delete").contains(e.getTagName())) {
          statements.add(e);
        }
      }
      Set<String> specific = new HashSet<>();
      for (Element e : statements) {
        if (databaseId.equals(e.getAttribute("databaseId"))) {
          specific.add(e.getAttribute("id"));
        }
      }
      for (Element e : statements) {
        String id = e.getAttribute("databaseId");
        if (id.isEmpty() ? specific.contains(e.getAttribute("id")) : !id.equals(databaseId)) {
          mapper.removeChild(e);
        } else {
          e.removeAttribute("databaseId");
        }
      }
      Transformer transformer = TransformerFactory.newInstance().newTransformer();
      transformer.setOutputProperty(OutputKeys.DOCTYPE_PUBLIC, "-//mybatis.org//DTD Mapper 3.0//EN");
      transformer.setOutputProperty(OutputKeys.DOCTYPE_SYSTEM, "https://mybatis.org/dtd/mybatis-3-mapper.dtd");
      transformer.setOutputProperty(OutputKeys.ENCODING, "UTF-8");
      StringWriter out = new StringWriter();
      transformer.transform(new DOMSource(document), new StreamResult(out));
      return out.toString();
    } catch (ParserConfigurationException | SAXException | IOException | TransformerException e) {
      throw new IllegalStateException("could not select the " + databaseId + " statements of a mapper"
          + " of idem-store-jdbc: " + e, e);
    }
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
