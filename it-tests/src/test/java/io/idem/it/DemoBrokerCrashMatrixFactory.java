package io.idem.it;

import io.idem.BrokerConsumer;
import io.idem.demo.DemoBroker;
import io.idem.demo.DemoBrokers;
import io.idem.store.jdbc.MyBatisProcessedEventStore;
import io.idem.testkit.CrashMatrixConsumerFactory;
import io.idem.testkit.CrashMatrixContext;

/**
 * The crash matrix's consumer in the child JVM ({@link StoreCrashMatrixIT}): the main job's
 * consumer of the broker the property {@code broker} names, connected through the parent broker's
 * connection arguments (the other properties), with the kit's pipeline on a store-jdbc store on
 * the parent's database — whichever it is: the store reads its dialect from the connection.
 */
public final class DemoBrokerCrashMatrixFactory implements CrashMatrixConsumerFactory {
  /** The property naming the broker: one of {@link DemoBrokers#NAMES}. */
  static final String BROKER = "broker";

  @Override
  public BrokerConsumer start(CrashMatrixContext context) {
    DemoBroker broker = DemoBrokers.forConsumer(context.property(BROKER), context.properties());
    MyBatisProcessedEventStore store = MyBatisProcessedEventStore.builder(context.sessions()).build();
    BrokerConsumer consumer = broker.consumer(context.destination(), context.kitPipeline(store));
    consumer.start();
    return consumer;
  }
}
