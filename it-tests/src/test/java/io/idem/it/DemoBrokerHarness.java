package io.idem.it;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.demo.DemoBroker;
import io.idem.demo.Outbound;
import io.idem.testkit.BrokerHarness;
import io.idem.testkit.DeadLetteredMessage;
import java.util.List;
import java.util.Map;

/**
 * The testkit's view ({@link BrokerHarness}) of one destination of a main-job broker ({@link
 * DemoBroker}, any of the four): created on construction with its dead-letter destination,
 * deleted on {@link #close()}. For running the testkit's {@code CrashMatrix} on the main job's
 * brokers ({@link StoreCrashMatrixIT}); the broker must be started and outlives the harness.
 */
final class DemoBrokerHarness implements BrokerHarness {
  private final DemoBroker broker;
  private final String destination;
  private volatile String group = "";

  DemoBrokerHarness(DemoBroker broker, String destination) {
    this.broker = broker;
    this.destination = destination;
    broker.createDestination(destination);
  }

  @Override
  public String destination() {
    return destination;
  }

  @Override
  public void publish(Map<String, String> headers, byte[] payload) {
    broker.publish(destination, List.of(Outbound.of(headers, payload)));
  }

  @Override
  public <C> BrokerConsumer newConsumer(IdempotentConsumer<C> pipeline) {
    return broker.consumer(destination, pipeline);
  }

  @Override
  public List<DeadLetteredMessage> deadLetters() {
    return broker.readDeadLetters(destination);
  }

  @Override
  public long pendingCount() {
    return broker.pending(destination, group);
  }

  @Override
  public void useConsumerGroup(String consumerGroup) {
    this.group = consumerGroup;
  }

  @Override
  public void close() {
    broker.deleteDestination(destination);
  }
}
