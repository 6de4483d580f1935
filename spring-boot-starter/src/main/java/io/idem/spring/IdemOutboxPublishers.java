package io.idem.spring;

import io.idem.spi.OutboxPublisher;
import java.util.Map;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The outbox relay's publisher for {@code idem.outbox.publisher}, built on the application's own
 * client for that broker; each method touches only its broker's classes. What each one publishes
 * and when it returns is its adapter's ({@code KafkaOutboxPublisher}, {@code
 * RabbitOutboxPublisher}, {@code JmsOutboxPublisher}, {@code SqsOutboxPublisher}; docs/OUTBOX.md).
 * Stateless.
 */
final class IdemOutboxPublishers {
  private IdemOutboxPublishers() {}

  /**
   * @throws IllegalStateException naming what is missing: the adapter module, or the client bean
   */
  static OutboxPublisher create(IdemProperties.Broker broker, IdemOutboxProperties properties,
      ListableBeanFactory beans) {
    String adapter = switch (broker) {
      case KAFKA -> "io.idem.kafka.KafkaOutboxPublisher";
      case RABBITMQ -> "io.idem.rabbitmq.RabbitOutboxPublisher";
      case SQS -> "io.idem.sqs.SqsOutboxPublisher";
      case JMS -> "io.idem.jms.JmsOutboxPublisher";
    };
    if (!ClassUtils.isPresent(adapter, IdemOutboxPublishers.class.getClassLoader())) {
      throw new IllegalStateException("idem.outbox.publisher=" + broker.name().toLowerCase(java.util.Locale.ROOT)
          + " needs " + adapter + " on the classpath (add idem-" + broker.name().toLowerCase(java.util.Locale.ROOT) + ")");
    }
    return switch (broker) {
      case KAFKA -> Kafka.create(beans);
      case RABBITMQ -> Rabbit.create(beans, properties.getRabbitmqExchange());
      case SQS -> Sqs.create(beans);
      case JMS -> io.idem.jms.JmsOutboxPublisher.create(bean(beans, jakarta.jms.ConnectionFactory.class, "a JMS ConnectionFactory"));
    };
  }

  static <T> T bean(ListableBeanFactory beans, Class<T> type, String what) {
    try {
      return beans.getBeanProvider(type).getObject();
    } catch (RuntimeException e) {
      throw new IllegalStateException("idem.outbox.publisher needs " + what + " bean ("
          + type.getName() + "): " + e.getMessage(), e);
    }
  }

  /** With the configuration of the application's {@code ProducerFactory} (its bootstrap servers, security). */
  private static final class Kafka {
    static OutboxPublisher create(ListableBeanFactory beans) {
      org.springframework.kafka.core.ProducerFactory<?, ?> factory =
          bean(beans, org.springframework.kafka.core.ProducerFactory.class, "a Spring Kafka ProducerFactory");
      Map<String, Object> config = new java.util.HashMap<>(factory.getConfigurationProperties());
      config.remove("transactional.id"); // the relay's producer is not transactional
      return io.idem.kafka.KafkaOutboxPublisher.create(config);
    }
  }

  /**
   * On a connection of its own from the application's Spring AMQP {@code ConnectionFactory}'s
   * RabbitMQ client factory, closed with the publisher.
   */
  private static final class Rabbit {
    static OutboxPublisher create(ListableBeanFactory beans, String exchange) {
      org.springframework.amqp.rabbit.connection.AbstractConnectionFactory factory = bean(beans,
          org.springframework.amqp.rabbit.connection.AbstractConnectionFactory.class,
          "a Spring AMQP CachingConnectionFactory");
      com.rabbitmq.client.Connection connection;
      try {
        connection = factory.getRabbitConnectionFactory().newConnection("idem-outbox-relay");
      } catch (java.io.IOException | java.util.concurrent.TimeoutException e) {
        throw new IllegalStateException("idem.outbox: could not connect to RabbitMQ: " + e.getMessage(), e);
      }
      io.idem.rabbitmq.RabbitOutboxPublisher publisher = io.idem.rabbitmq.RabbitOutboxPublisher.create(connection, exchange);
      return new OutboxPublisher() {
        @Override
        public void publish(io.idem.spi.OutboxMessage message) throws Exception {
          publisher.publish(message);
        }

        @Override
        public java.util.List<io.idem.spi.OutboxPublishResult> publishAll(java.util.List<io.idem.spi.OutboxMessage> messages)
            throws Exception {
          return publisher.publishAll(messages);
        }

        @Override
        public void close() throws Exception {
          try {
            publisher.close();
          } finally {
            connection.close();
          }
        }
      };
    }
  }

  /** The application's {@code SqsClient}, or a view of Spring Cloud AWS's {@code SqsAsyncClient}. */
  private static final class Sqs {
    static OutboxPublisher create(ListableBeanFactory beans) {
      software.amazon.awssdk.services.sqs.SqsClient client =
          beans.getBeanProvider(software.amazon.awssdk.services.sqs.SqsClient.class).getIfAvailable();
      if (client == null) {
        software.amazon.awssdk.services.sqs.SqsAsyncClient async = bean(beans,
            software.amazon.awssdk.services.sqs.SqsAsyncClient.class, "an SqsClient or SqsAsyncClient");
        client = new SqsAsyncSender(async);
      }
      return io.idem.sqs.SqsOutboxPublisher.create(client);
    }
  }
}
