package io.idem.kafka;

import io.idem.testkit.BrokerHarness;
import io.idem.testkit.CrashMatrix;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The adapter compatibility kit again, with the consumer group protocol of KIP-848
 * ({@code group.protocol=consumer}, server-side assignment, Kafka 4.0+) instead of the classic one,
 * and in per-message mode ({@code maxBatchSize(1)} set explicitly, crash matrix included), so that
 * per-message mode keeps the kit's full coverage now that batch mode is the default.
 */
class KafkaAdapterCompatibilityConsumerProtocolIT extends KafkaAdapterCompatibilityIT {

  @Override
  protected BrokerHarness harness(String name) {
    return new KafkaHarness(name, Map.of("group.protocol", "consumer"), maxBatchSize());
  }

  /** Per-message mode. */
  @Override
  OptionalInt maxBatchSize() {
    return OptionalInt.of(1);
  }

  /**
   * The crash matrix on this protocol too: the child's consumer cannot shorten its session (the
   * consumer protocol refuses {@code session.timeout.ms}), so a crashed member keeps its
   * partitions for the broker's {@code group.consumer.session.timeout.ms} (45 s by default, 15 s
   * on the fixtures' in-JVM broker).
   */
  @Override
  String groupProtocol() {
    return "consumer";
  }

  /** Each child life after a crash first waits out the broker's session timeout (15 s in the fixtures). */
  @Override
  protected CrashMatrix.Builder crashMatrix(CrashMatrix.Builder matrix) {
    return super.crashMatrix(matrix).timeout(Duration.ofSeconds(120));
  }
}
