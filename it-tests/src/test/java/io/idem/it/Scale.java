package io.idem.it;

/**
 * How big the suite's runs are: {@code -Didem.it.scale=full} (Maven profile {@code long}) runs the
 * full sizes, anything else (the default, {@code ci}) the reduced ones.
 */
final class Scale {
  private Scale() {}

  /** {@code full} under {@code -Didem.it.scale=full}, else {@code ci}. */
  static int events(int ci, int full) {
    return "full".equals(System.getProperty("idem.it.scale", "ci")) ? full : ci;
  }
}
