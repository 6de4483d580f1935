package io.idem.demo;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import io.idem.fixtures.ArtemisFixture;
import io.idem.fixtures.KafkaFixture;
import io.idem.fixtures.RabbitFixture;
import io.idem.fixtures.SqsFixture;
import io.idem.jms.JmsHeaderNames;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.sqs.SqsInboundMessage;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageResponse;

/**
 * Reads what a run's dead-letter destination holds, without consuming it: the ledger checks that
 * it holds exactly the messages that had to be dead-lettered. The destination names follow the
 * demo brokers' ({@code <topic>.DLT}, {@code <queue>.dlq}, {@code <queue>-dlq}, {@code
 * <queue>.dlq}); the broker is reached through the fixture the parent process started.
 *
 * <p>Call it once the consumers are stopped. Not thread-safe per destination: a RabbitMQ or SQS
 * message is taken and given back, so two browsers of one destination would see only part of it.
 */
public final class DeadLetterBrowser {
  private static final Duration SQS_HOLD = Duration.ofSeconds(60);

  private DeadLetterBrowser() {}

  /**
   * Every message in the dead-letter destination of {@code destination} on {@code broker}.
   *
   * @throws IllegalStateException when the broker cannot be read
   */
  public static List<DeadLetter> browse(String broker, String destination) {
    try {
      switch (broker) {
        case "kafka":
          return kafka(destination + KafkaConsumerConfig.DEFAULT_DEAD_LETTER_SUFFIX);
        case "rabbitmq":
          return rabbit(destination + ".dlq");
        case "sqs":
          return sqs(destination + "-dlq");
        case "jms":
          return jms(destination + ".dlq");
        default:
          throw new IllegalArgumentException("broker must be one of " + DemoBrokers.NAMES + ", but was '" + broker + "'");
      }
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("could not read the dead letters of " + destination + " on " + broker + ": " + e, e);
    }
  }

  private static List<DeadLetter> kafka(String topic) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.shared().bootstrapServers());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    List<DeadLetter> out = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      consumer.partitionsFor(topic, Duration.ofSeconds(30))
          .forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("could not read " + topic + " to its end offsets " + end + " within 60 s");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          Map<String, String> headers = new LinkedHashMap<>();
          for (Header h : r.headers()) {
            if (h.value() != null && Utf8.isValid(h.value())) {
              headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
            }
          }
          out.add(new DeadLetter(headers, r.value() == null ? new byte[0] : r.value()));
        }
      }
    }
    return out;
  }

  private static List<DeadLetter> rabbit(String queue) throws Exception {
    List<DeadLetter> out = new ArrayList<>();
    try (Connection connection = RabbitFixture.shared().connectionFactory().newConnection("idem-demo-dlq-browser")) {
      Channel channel = connection.createChannel();
      // taken without ack; closing the channel returns every one of them to the queue
      for (GetResponse r; (r = channel.basicGet(queue, false)) != null; ) {
        Map<String, String> headers = new LinkedHashMap<>();
        Map<String, Object> raw = r.getProps().getHeaders();
        if (raw != null) {
          raw.forEach((name, value) -> {
            if (value instanceof LongString || value instanceof String) {
              headers.put(name, value.toString());
            } else if (value instanceof byte[] bytes && Utf8.isValid(bytes)) {
              headers.put(name, new String(bytes, StandardCharsets.UTF_8));
            } else if (value instanceof Number || value instanceof Boolean) {
              headers.put(name, value.toString());
            }
          });
        }
        out.add(new DeadLetter(headers, r.getBody()));
      }
      channel.close();
    }
    return out;
  }

  private static List<DeadLetter> sqs(String queue) {
    List<DeadLetter> out = new ArrayList<>();
    try (SqsClient client = SqsFixture.shared().newClient()) {
      String url = client.getQueueUrl(b -> b.queueName(queue)).queueUrl();
      Map<String, String> receipts = new HashMap<>();
      int emptyReceives = 0;
      // taken for SQS_HOLD, then made visible again
      while (emptyReceives < 2) {
        ReceiveMessageResponse response = client.receiveMessage(b -> b.queueUrl(url)
            .maxNumberOfMessages(10)
            .visibilityTimeout((int) SQS_HOLD.toSeconds())
            .waitTimeSeconds(0)
            .messageAttributeNames("All")
            .messageSystemAttributeNames(MessageSystemAttributeName.ALL));
        if (response.messages().isEmpty()) {
          emptyReceives++;
          continue;
        }
        emptyReceives = 0;
        for (software.amazon.awssdk.services.sqs.model.Message m : response.messages()) {
          if (receipts.put(m.messageId(), m.receiptHandle()) == null) {
            SqsInboundMessage message = SqsInboundMessage.of(queue, m, Instant.now());
            out.add(new DeadLetter(message.headers(), message.payload()));
          }
        }
      }
      List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
      for (String receipt : receipts.values()) {
        entries.add(ChangeMessageVisibilityBatchRequestEntry.builder()
            .id(Integer.toString(entries.size())).receiptHandle(receipt).visibilityTimeout(0).build());
        if (entries.size() == 10) {
          client.changeMessageVisibilityBatch(b -> b.queueUrl(url).entries(entries));
          entries.clear();
        }
      }
      if (!entries.isEmpty()) {
        client.changeMessageVisibilityBatch(b -> b.queueUrl(url).entries(entries));
      }
    }
    return out;
  }

  private static List<DeadLetter> jms(String queue) throws JMSException {
    List<DeadLetter> out = new ArrayList<>();
    try (jakarta.jms.Connection connection = ArtemisFixture.shared().connectionFactory().createConnection()) {
      connection.start();
      Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
      QueueBrowser browser = session.createBrowser(session.createQueue(queue));
      Enumeration<?> messages = browser.getEnumeration();
      while (messages.hasMoreElements()) {
        Message m = (Message) messages.nextElement();
        Map<String, String> headers = new LinkedHashMap<>();
        Enumeration<?> names = m.getPropertyNames();
        while (names.hasMoreElements()) {
          String name = (String) names.nextElement();
          Object value = m.getObjectProperty(name);
          if (value != null && !(value instanceof byte[])) {
            headers.put(JmsHeaderNames.toHeaderName(name), value.toString());
          }
        }
        byte[] payload;
        if (m instanceof BytesMessage bytes) {
          payload = new byte[(int) bytes.getBodyLength()];
          bytes.readBytes(payload);
        } else if (m instanceof TextMessage text) {
          payload = text.getText() == null ? new byte[0] : text.getText().getBytes(StandardCharsets.UTF_8);
        } else {
          payload = new byte[0];
        }
        out.add(new DeadLetter(headers, payload));
      }
      browser.close();
    }
    return out;
  }
}
