package io.idem.jms;

import java.util.OptionalInt;

/**
 * The adapter compatibility kit, its crash matrix included, on ActiveMQ Artemis in per-message
 * mode, set explicitly ({@code maxBatchSize(1)}: one claim, one COMMIT, one session commit per
 * message); the default configuration (batch mode) is {@link JmsAdapterCompatibilityIT}.
 */
class JmsAdapterCompatibilityPerMessageIT extends JmsCompatibilityKit {
  @Override
  OptionalInt maxBatchSize() {
    return OptionalInt.of(1);
  }
}
