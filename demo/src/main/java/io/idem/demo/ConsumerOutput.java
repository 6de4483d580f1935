package io.idem.demo;

import io.idem.ProcessingOutcome;
import io.idem.fixtures.ChildJvm;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;

/**
 * What consumer processes reported: their {@code OUTCOME <outcome> <broker>} lines (or the receipts
 * consumer's {@code RECEIPT-OUTCOME} lines), counted per broker. A delivery settled just before a SIGKILL may be missing (its line was never written).
 */
final class ConsumerOutput {
  private final Map<String, long[]> perBroker; // broker → {deliveries, duplicates}

  private ConsumerOutput(Map<String, long[]> perBroker) {
    this.perBroker = perBroker;
  }

  static ConsumerOutput of(Collection<ChildJvm> children) {
    return of(children, ConsumerProcess.OUTCOME_PREFIX);
  }

  /** The downstream receipts consumers' {@code RECEIPT-OUTCOME <outcome> <broker>} lines. */
  static ConsumerOutput receipts(Collection<ChildJvm> children) {
    return of(children, ConsumerProcess.RECEIPT_OUTCOME_PREFIX);
  }

  private static ConsumerOutput of(Collection<ChildJvm> children, String prefix) {
    Map<String, long[]> counts = new TreeMap<>();
    for (ChildJvm child : children) {
      for (String line : child.lines()) {
        if (!line.startsWith(prefix)) {
          continue;
        }
        String[] parts = line.split(" ");
        long[] c = counts.computeIfAbsent(parts.length > 2 ? parts[2] : "?", b -> new long[2]);
        c[0]++;
        if (parts.length > 1 && parts[1].equals(ProcessingOutcome.DUPLICATE.name())) {
          c[1]++;
        }
      }
    }
    return new ConsumerOutput(counts);
  }

  long deliveries() {
    return perBroker.values().stream().mapToLong(c -> c[0]).sum();
  }

  long duplicates() {
    return perBroker.values().stream().mapToLong(c -> c[1]).sum();
  }

  long deliveries(String broker) {
    long[] c = perBroker.get(broker);
    return c == null ? 0 : c[0];
  }

  long duplicates(String broker) {
    long[] c = perBroker.get(broker);
    return c == null ? 0 : c[1];
  }
}
