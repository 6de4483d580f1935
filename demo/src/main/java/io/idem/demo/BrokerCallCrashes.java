package io.idem.demo;

import io.idem.testkit.CrashInjector;
import io.idem.testkit.CrashPoint;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

/**
 * The consumer process's broker clients, wrapped so that the {@link CrashInjector}'s two crash
 * points inside broker calls land there: {@link CrashPoint#DURING_ACK} once the broker performed
 * the operation that settles a message, {@link CrashPoint#DEAD_LETTER_COPY_STORED} once the broker
 * stored a dead-letter copy (the original not removed yet). Both halt <em>after</em> the broker
 * answered and before the call returns to the adapter: the broker settled (or stored), the adapter
 * never learned it. The operations:
 *
 * <table>
 *   <caption>Where each broker's calls pass the crash points</caption>
 *   <tr><th>broker</th><th>{@code DURING_ACK}</th><th>{@code DEAD_LETTER_COPY_STORED}</th></tr>
 *   <tr><td>Kafka</td><td>{@code KafkaConsumer.commitSync} returned (offsets committed)</td>
 *       <td>the {@code KafkaProducer.send} to the {@code .DLT} topic acknowledged ({@code acks=all}), before
 *       the offset commit</td></tr>
 *   <tr><td>RabbitMQ</td><td>{@code Channel.basicAck} returned</td>
 *       <td>{@code waitForConfirms} on the dead-letter publish returned true (the copy is
 *       confirmed), before the original's {@code basicAck}</td></tr>
 *   <tr><td>SQS</td><td>{@code DeleteMessage} / {@code DeleteMessageBatch} answered (also a
 *       batch flushed later)</td><td>{@code SendMessage} to the DLQ's URL answered, before the
 *       original's delete</td></tr>
 *   <tr><td>JMS</td><td>{@code Session.commit()} returned (transacted sessions, the demo's
 *       default); {@code Message.acknowledge()} is not wrapped</td>
 *       <td>{@code MessageProducer.send} to the DLQ returned in {@code CLIENT_ACKNOWLEDGE} (a
 *       persistent send the broker confirmed), before {@code acknowledge()}; in a transacted
 *       session the copy and the removal are one commit and the point does not exist</td></tr>
 * </table>
 *
 * <p>The operation printed in the {@code IDEM-CRASH} line starts with {@value #OPERATION_PREFIX}
 * ({@code IDEM-CRASH DURING_ACK broker-call:KafkaConsumer.commitSync}), so the parent can check
 * the halt came from a broker call ({@link LedgerRun} fails the run otherwise). The injector must
 * be built with intercepted broker calls ({@code -Didem.crash.broker-calls=intercepted}), which
 * turns off its helper-thread fallback for {@code DURING_ACK}. Thread-safe, as the injector is.
 */
public final class BrokerCallCrashes {
  /** Start of the operation named in an {@code IDEM-CRASH} line that a broker call placed: {@value}. */
  static final String OPERATION_PREFIX = "broker-call:";

  private final CrashInjector crashes;

  BrokerCallCrashes(CrashInjector crashes) {
    this.crashes = crashes;
  }

  /** The settling call {@code operation} has been performed by the broker. */
  void settled(String operation) {
    crashes.atBrokerOperation(CrashPoint.DURING_ACK, OPERATION_PREFIX + operation);
  }

  /** The broker stored the dead-letter copy with {@code operation}; the original is not removed yet. */
  void deadLetterCopyStored(String operation) {
    crashes.atBrokerOperation(CrashPoint.DEAD_LETTER_COPY_STORED, OPERATION_PREFIX + operation);
  }

  /** Kafka consumers for the adapter's consumer factory, passing DURING_ACK inside each {@code commitSync}. */
  Function<Map<String, Object>, Consumer<byte[], byte[]>> kafkaConsumers() {
    return properties -> new KafkaConsumer<byte[], byte[]>(properties) {
      @Override
      public void commitSync() {
        super.commitSync();
        settled("KafkaConsumer.commitSync");
      }

      @Override
      public void commitSync(Duration timeout) {
        super.commitSync(timeout);
        settled("KafkaConsumer.commitSync");
      }

      @Override
      public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        super.commitSync(offsets);
        if (settles(offsets)) {
          settled("KafkaConsumer.commitSync");
        }
      }

      @Override
      public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
        super.commitSync(offsets, timeout);
        if (settles(offsets)) {
          settled("KafkaConsumer.commitSync");
        }
      }
    };
  }

  /**
   * Whether a commit moves offsets for settled records, not only the adapter's mark made at
   * assignment before any record ran (offset metadata {@code idem:owned}, docs/BROKERS.md, Kafka
   * "Process deaths"), which DURING_ACK must not hit: a crash there would test nothing.
   */
  private static boolean settles(Map<TopicPartition, OffsetAndMetadata> offsets) {
    return offsets.values().stream().anyMatch(offset -> !"idem:owned".equals(offset.metadata()));
  }

  /**
   * Kafka producers for the adapter's producer factory, passing DEAD_LETTER_COPY_STORED once the
   * broker acknowledged a copy sent to {@code deadLetterTopic}: the send waits for the
   * acknowledgement itself, then hands the completed future to the adapter.
   */
  Function<Map<String, Object>, Producer<byte[], byte[]>> kafkaDeadLetterProducers(String deadLetterTopic) {
    return properties -> new KafkaProducer<byte[], byte[]>(properties) {
      @Override
      public Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record) {
        Future<RecordMetadata> sent = super.send(record);
        return record.topic().equals(deadLetterTopic) ? stored(sent) : sent;
      }

      @Override
      public Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
        Future<RecordMetadata> sent = super.send(record, callback);
        return record.topic().equals(deadLetterTopic) ? stored(sent) : sent;
      }

      private Future<RecordMetadata> stored(Future<RecordMetadata> sent) {
        try {
          sent.get();
        } catch (ExecutionException e) {
          return sent; // not stored: the adapter sees the failure from the future
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return sent;
        }
        deadLetterCopyStored("KafkaProducer.send");
        return sent;
      }
    };
  }

  /**
   * {@code factory} (its settings kept: the adapter clones it, and a clone keeps this subclass)
   * whose channels pass DURING_ACK after {@code basicAck} and DEAD_LETTER_COPY_STORED after a
   * confirm wait that returned (on the consumer, only dead-letter copies are published).
   */
  com.rabbitmq.client.ConnectionFactory rabbit(String uri) {
    com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory() {
      @Override
      public com.rabbitmq.client.Connection newConnection(String clientProvidedName)
          throws IOException, TimeoutException {
        com.rabbitmq.client.Connection real = super.newConnection(clientProvidedName);
        return proxy(com.rabbitmq.client.Connection.class, real, (method, args, result) ->
            method.equals("createChannel") && result != null
                ? proxy(com.rabbitmq.client.Channel.class, (com.rabbitmq.client.Channel) result,
                    (m, a, r) -> {
                      if (m.equals("basicAck")) {
                        settled("Channel.basicAck");
                      } else if ((m.equals("waitForConfirms") && Boolean.TRUE.equals(r))
                          || m.equals("waitForConfirmsOrDie")) {
                        deadLetterCopyStored("Channel." + m);
                      }
                      return r;
                    })
                : result);
      }
    };
    try {
      factory.setUri(uri);
    } catch (Exception e) {
      throw new IllegalArgumentException("RabbitMQ URI cannot be used: " + e.getMessage(), e);
    }
    return factory;
  }

  /**
   * {@code real}, passing DURING_ACK after {@code DeleteMessage} / {@code DeleteMessageBatch} and
   * DEAD_LETTER_COPY_STORED after a {@code SendMessage} to {@code deadLetterQueueUrl}.
   */
  SqsClient sqs(SqsClient real, String deadLetterQueueUrl) {
    return proxy(SqsClient.class, real, (method, args, result) -> {
      switch (method) {
        case "deleteMessage", "deleteMessageBatch" -> settled("SqsClient." + method);
        case "sendMessage" -> {
          if (args[0] instanceof SendMessageRequest request && deadLetterQueueUrl.equals(request.queueUrl())) {
            deadLetterCopyStored("SqsClient.sendMessage");
          }
        }
        default -> { }
      }
      return result;
    });
  }

  /**
   * Artemis' factory for {@code url} (a subclass, so the adapter still reads the broker's limits)
   * whose sessions pass DURING_ACK after {@code commit()} and whose producers for queue {@code
   * deadLetterQueue} pass DEAD_LETTER_COPY_STORED after {@code send} when the session is not
   * transacted (the broker's limits are read with sends of their own, which pass nothing).
   */
  @SuppressWarnings("serial")
  ActiveMQConnectionFactory jms(String url, String deadLetterQueue) {
    return new ActiveMQConnectionFactory(url) {
      @Override
      public Connection createConnection() throws JMSException {
        return jmsConnection(super.createConnection(), deadLetterQueue);
      }

      @Override
      public Connection createConnection(String user, String password) throws JMSException {
        return jmsConnection(super.createConnection(user, password), deadLetterQueue);
      }
    };
  }

  private Connection jmsConnection(Connection real, String deadLetterQueue) {
    if (Proxy.isProxyClass(real.getClass())) {
      return real; // createConnection() may go through createConnection(user, password)
    }
    return proxy(Connection.class, real, (method, args, result) -> method.equals("createSession")
        ? jmsSession((Session) result, deadLetterQueue)
        : result);
  }

  private Session jmsSession(Session real, String deadLetterQueue) {
    return proxy(Session.class, real, (method, args, result) -> {
      if (method.equals("commit")) {
        settled("Session.commit");
      } else if (method.equals("createProducer") && args[0] instanceof Queue queue
          && deadLetterQueue.equals(queue.getQueueName())) {
        return proxy(MessageProducer.class, (MessageProducer) result, (m, a, r) -> {
          if (m.equals("send") && !real.getTransacted()) {
            deadLetterCopyStored("MessageProducer.send");
          }
          return r;
        });
      }
      return result;
    });
  }

  /** What happens after a call on the real object returned {@code result} (null for void). */
  @FunctionalInterface
  private interface After {
    Object after(String method, Object[] args, Object result) throws Exception;
  }

  private static <T> T proxy(Class<T> type, T real, After after) {
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
        (p, method, args) -> after.after(method.getName(), args, invoke(real, method, args))));
  }

  private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
