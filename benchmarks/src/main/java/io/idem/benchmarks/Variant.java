package io.idem.benchmarks;

/** The consumers measured side by side. */
enum Variant {
  /** Idem's consumer of the broker exactly as the README's quick start (one consumer thread). */
  IDEM("idem", true),
  /**
   * Idem in per-message mode ({@code maxBatchSize(1)} set explicitly): one database transaction per
   * message, whatever the adapter's default mode is.
   */
  IDEM_PER_MESSAGE("idem-per-message", true),
  /** Idem in batch mode ({@code maxBatchSize}), the same per-message handler. */
  IDEM_BATCH("idem-batch", true),
  /** Idem in batch mode with a {@code BatchMessageHandler} writing one multi-row INSERT. */
  IDEM_BATCH_HANDLER("idem-batch-handler", true),
  /** A plain consumer of the broker's client, one JDBC transaction per message, no dedup. */
  RAW_PER_RECORD("raw-tx", false),
  /** A plain consumer, one transaction and one multi-row INSERT per received batch, one ack for it, no dedup. */
  RAW_BATCHED("raw-batch", false);

  final String label;
  final boolean idem;

  Variant(String label, boolean idem) {
    this.label = label;
    this.idem = idem;
  }

  boolean batch() {
    return this == IDEM_BATCH || this == IDEM_BATCH_HANDLER;
  }

  /** A batch variant: Idem's two batch modes and the batched plain consumer. */
  boolean batched() {
    return batch() || this == RAW_BATCHED;
  }

  static Variant of(String label) {
    for (Variant v : values()) {
      if (v.label.equals(label)) {
        return v;
      }
    }
    throw new IllegalArgumentException("variant must be one of idem, idem-per-message, idem-batch, idem-batch-handler, raw-tx,"
        + " raw-batch, but was '" + label + "'");
  }
}
