package io.idem.kafka;

import io.idem.testkit.BrokerHarness;
import io.idem.testkit.CrashMatrixConsumerFactory;
import java.util.Map;

/**
 * The adapter compatibility kit again, with the consumer group protocol of KIP-848
 * ({@code group.protocol=consumer}, server-side assignment, Kafka 4.0+) instead of the classic one.
 */
class KafkaAdapterCompatibilityConsumerProtocolIT extends KafkaAdapterCompatibilityIT {

  @Override
  protected BrokerHarness harness(String name) {
    return new KafkaHarness(name, Map.of("group.protocol", "consumer"));
  }

  /** The crash matrix runs once for Kafka, in {@link KafkaAdapterCompatibilityIT} (classic protocol). */
  @Override
  protected Class<? extends CrashMatrixConsumerFactory> crashConsumerFactory() {
    return null;
  }
}
