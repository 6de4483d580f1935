package io.idem.it;

/**
 * Test sizes: the default run ({@code idem.it.scale=ci}) is small enough for CI; the Maven profile
 * {@code long} sets {@code idem.it.scale=full} for the long variants of the same tests.
 */
public final class Scale {
  private Scale() {}

  /** True when {@code -Didem.it.scale=full}. */
  public static boolean full() {
    return "full".equalsIgnoreCase(System.getProperty("idem.it.scale", "ci"));
  }

  /** {@code full} under {@code idem.it.scale=full}, else {@code ci}. */
  public static int events(int ci, int full) {
    return full() ? full : ci;
  }
}
