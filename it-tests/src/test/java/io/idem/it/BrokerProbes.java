package io.idem.it;

import io.idem.fixtures.ArtemisFixture;
import jakarta.jms.Connection;
import jakarta.jms.Message;
import jakarta.jms.QueueRequestor;
import jakarta.jms.QueueSession;
import jakarta.jms.Session;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.activemq.artemis.api.jms.management.JMSManagementHelper;

/** Broker-side facts the demo's {@code DemoBroker} does not expose, read through the broker's management. */
final class BrokerProbes {
  private static final Pattern CONSUMER_ID = Pattern.compile("\"consumerID\"\\s*:\\s*(\\d+)");
  private static final Pattern CONNECTION_ID = Pattern.compile("\"connectionID\"\\s*:\\s*\"([^\"]+)\"");

  private BrokerProbes() {}

  /**
   * The consumers on an Artemis queue as {@code connectionID/consumerID}, from the broker's
   * management ({@code queue.<name>.listConsumersAsJSON}): a consumer that reconnected shows up
   * with new ids.
   */
  static Set<String> artemisConsumers(String queue) {
    ArtemisFixture artemis = ArtemisFixture.shared();
    try (Connection c = artemis.connectionFactory().createConnection()) {
      c.start();
      QueueSession session = (QueueSession) c.createSession(false, Session.AUTO_ACKNOWLEDGE);
      QueueRequestor requestor = new QueueRequestor(session, session.createQueue(ArtemisFixture.MANAGEMENT_ADDRESS));
      Message request = session.createMessage();
      JMSManagementHelper.putOperationInvocation(request, "queue." + queue, "listConsumersAsJSON");
      Message reply = requestor.request(request);
      requestor.close();
      Object result = JMSManagementHelper.getResult(reply);
      if (!JMSManagementHelper.hasOperationSucceeded(reply)) {
        throw new IllegalStateException("listConsumersAsJSON of " + queue + " failed: " + result);
      }
      Set<String> ids = new TreeSet<>();
      // one JSON object per consumer
      for (String consumer : String.valueOf(result).split("\\}")) {
        Matcher consumerId = CONSUMER_ID.matcher(consumer);
        Matcher connectionId = CONNECTION_ID.matcher(consumer);
        if (consumerId.find() && connectionId.find()) {
          ids.add(connectionId.group(1) + "/" + consumerId.group(1));
        }
      }
      return ids;
    } catch (Exception e) {
      throw new IllegalStateException("could not list the consumers of " + queue + ": " + e, e);
    }
  }
}
