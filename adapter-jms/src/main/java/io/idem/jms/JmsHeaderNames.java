package io.idem.jms;

import java.util.Objects;
import java.util.Set;

/**
 * How Idem header names map to JMS property names.
 *
 * <p>A JMS property name must be a Java identifier (Jakarta Messaging 3.1, section 3.5.1), so
 * the header names Idem uses elsewhere ({@code idempotency-key}, {@code idem-dead-letter-cause})
 * cannot be JMS property names as they are. The rule, applied in both directions:
 *
 * <ul>
 *   <li>writing (producers, dead-letter copies): every {@code -} becomes {@code _}, so the key
 *       header {@link io.idem.IdempotencyKeyExtractor#DEFAULT_HEADER idempotency-key} is the JMS
 *       property {@value #DEFAULT_KEY_PROPERTY};
 *   <li>reading ({@link JmsInboundMessage#headers()}): every String property appears under its
 *       own name and, when that contains {@code _} (and does not start with {@code JMS} or
 *       {@code _}, which JMS and providers reserve), also under the name with {@code _} replaced
 *       by {@code -}. So the default key extractor finds {@code idempotency_key}, and the
 *       CloudEvents JMS binding's {@code ce_id}/{@code ce_source} are found as they are.
 * </ul>
 */
public final class JmsHeaderNames {

  /** The JMS property producers set the idempotency key in: {@value}. */
  public static final String DEFAULT_KEY_PROPERTY = "idempotency_key";

  // Message selector keywords, which JMS forbids as property names.
  private static final Set<String> RESERVED = Set.of(
      "NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE");

  private JmsHeaderNames() {}

  /**
   * The JMS property name for an Idem header name: {@code -} replaced by {@code _}.
   *
   * @throws IllegalArgumentException when the result is still not a valid JMS property name
   */
  public static String toPropertyName(String headerName) {
    Objects.requireNonNull(headerName, "headerName");
    String name = headerName.replace('-', '_');
    if (!isValidPropertyName(name)) {
      throw new IllegalArgumentException("header name '" + headerName + "' maps to JMS property"
          + " name '" + name + "', which is not a Java identifier or is a reserved word");
    }
    return name;
  }

  /**
   * The alias a JMS property is also exposed under in {@link JmsInboundMessage#headers()}, or the
   * name itself when it gets none.
   */
  public static String toHeaderName(String propertyName) {
    Objects.requireNonNull(propertyName, "propertyName");
    if (propertyName.startsWith("JMS") || propertyName.startsWith("_")) {
      return propertyName;
    }
    return propertyName.replace('_', '-');
  }

  /** Whether {@code name} is allowed as a JMS property name. */
  public static boolean isValidPropertyName(String name) {
    if (name.isEmpty() || !Character.isJavaIdentifierStart(name.codePointAt(0))) {
      return false;
    }
    for (int i = Character.charCount(name.codePointAt(0)); i < name.length(); ) {
      int cp = name.codePointAt(i);
      if (!Character.isJavaIdentifierPart(cp)) {
        return false;
      }
      i += Character.charCount(cp);
    }
    return !RESERVED.contains(name.toUpperCase(java.util.Locale.ROOT));
  }
}
