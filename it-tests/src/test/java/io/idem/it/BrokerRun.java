package io.idem.it;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import java.io.IOException;

/**
 * One test's broker, destination, database schema and consumer, closed in reverse order (the
 * destination deleted, so a run leaves nothing behind). Confined to the test thread.
 */
final class BrokerRun implements AutoCloseable {
  final DemoBroker broker;
  final String destination;
  final ItDatabase db;
  private BrokerConsumer consumer;

  private BrokerRun(DemoBroker broker, String destination, ItDatabase db) {
    this.broker = broker;
    this.destination = destination;
    this.db = db;
  }

  /**
   * Starts (or connects to) broker {@code name}, creates {@code <prefix>-<name>-<run>} and a
   * schema of its own.
   */
  static BrokerRun start(String name, String prefix, String run) throws IOException {
    DemoBroker broker = DemoBrokers.create(name);
    System.out.println("[it] " + broker.start());
    String destination = prefix + "-" + name + "-" + run;
    broker.createDestination(destination);
    return new BrokerRun(broker, destination, ItDatabase.direct(prefix.replace("idem-it-", "it_").replace('-', '_') + "_" + name));
  }

  /** Starts an adapter consumer of the destination running {@code pipeline}. */
  BrokerConsumer consume(IdempotentConsumer<?> pipeline) {
    consumer = broker.consumer(destination, pipeline);
    consumer.start();
    return consumer;
  }

  @Override
  public void close() {
    if (consumer != null) {
      consumer.close();
    }
    db.close();
    broker.deleteDestination(destination);
    broker.close();
  }
}
