package io.idem.demo;

/**
 * A server the demo needs does not answer (RabbitMQ, PostgreSQL at {@code IDEM_POSTGRES_URL}):
 * the message is one line saying what was tried and how to fix it. {@link DemoMain} prints it
 * without a stack trace and exits with status 2, as for a usage error: the command cannot run as
 * given in this environment.
 */
final class MissingPrerequisite extends RuntimeException {
  private static final long serialVersionUID = 1L;

  MissingPrerequisite(String message, Throwable cause) {
    super(oneLine(message), cause);
  }

  /** {@code text} on one line: a driver's multi-line message must not spread the error out. */
  static String oneLine(String text) {
    return text.replaceAll("\\s*[\\r\\n]+\\s*", " ").trim();
  }

  /** {@code uri} with the password of its user-info replaced by {@code ***}. */
  static String redact(String uri) {
    return uri.replaceFirst("^([a-zA-Z][a-zA-Z0-9+.-]*://[^:/@]*):[^@/]*@", "$1:***@");
  }
}
