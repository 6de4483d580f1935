package io.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The server version that decides whether a quorum dead-letter queue gets {@code x-delivery-limit=-1}. */
class TopologyVersionTest {

  @Test
  void theMajorVersionDecidesAndAnUnknownVersionAddsNothing() {
    assertThat(Topology.majorVersion("4.0.5")).isEqualTo(4);
    assertThat(Topology.majorVersion("4.3.0-rc.1")).isEqualTo(4);
    assertThat(Topology.majorVersion("3.10.8")).isEqualTo(3);
    assertThat(Topology.majorVersion("")).isZero();
    assertThat(Topology.majorVersion("unknown")).isZero();
  }
}
