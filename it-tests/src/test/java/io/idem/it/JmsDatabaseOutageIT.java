package io.idem.it;

/**
 * {@link DatabaseOutageTestBase} on JMS (embedded Artemis, the demo's 4 transacted workers).
 * The session is the set of consumers on the queue (connection and consumer ids from Artemis'
 * management): the same before and after, so no worker reconnected; and every effect was applied
 * on {@code JMSXDeliveryCount} 1, so no transaction was rolled back.
 */
class JmsDatabaseOutageIT extends DatabaseOutageTestBase {

  @Override
  protected String brokerName() {
    return "jms";
  }

  @Override
  protected Object brokerSession() {
    java.util.Set<String> consumers = BrokerProbes.artemisConsumers(destination);
    if (consumers.isEmpty()) {
      throw new IllegalStateException("no consumer on " + destination + " according to Artemis");
    }
    return consumers;
  }
}
