package io.idem.spring;

import io.idem.BrokerConsumer;
import io.idem.IdempotentConsumer;
import io.idem.jms.JmsConsumerConfig;
import io.idem.jms.JmsIdempotentConsumer;
import io.idem.kafka.KafkaConsumerConfig;
import io.idem.kafka.KafkaIdempotentConsumer;
import io.idem.rabbitmq.RabbitConsumerConfig;
import io.idem.rabbitmq.RabbitIdempotentConsumer;
import io.idem.sqs.SqsConsumerConfig;
import io.idem.sqs.SqsIdempotentConsumer;

/**
 * Builds Idem's adapters from {@code idem.consumers.<name>.*}; each method touches only its own
 * adapter's classes, so the others need not be on the classpath. A setting left unset ({@code
 * null}) is not passed, so the adapter's default holds ({@code maxBatchSize}: each config's {@code
 * DEFAULT_MAX_BATCH_SIZE}); {@code prefetch} is passed to RabbitMQ only. Stateless.
 */
final class IdemAdapters {
  private IdemAdapters() {}

  static BrokerConsumer kafka(String name, IdemProperties.Consumer c, String topic, String group,
      IdempotentConsumer<?> pipeline, String bootstrapServers) {
    KafkaConsumerConfig.Builder builder = KafkaConsumerConfig.builder(bootstrapServers, topic)
        .groupId(c.getGroupId() != null ? c.getGroupId() : group)
        .consumerProperties(c.getKafkaProperties());
    if (c.getDeadLetter() != null) {
      String deadLetter = c.getDeadLetter();
      builder.deadLetterTopicNaming(source -> deadLetter);
    }
    if (c.getConcurrency() != null) {
      builder.concurrency(c.getConcurrency());
    }
    if (c.getMaxBatchSize() != null) {
      builder.maxBatchSize(c.getMaxBatchSize());
    }
    if (c.getShutdownTimeout() != null) {
      builder.shutdownTimeout(c.getShutdownTimeout());
    }
    return KafkaIdempotentConsumer.create(builder.build(), pipeline);
  }

  static BrokerConsumer rabbit(String name, IdemProperties.Consumer c, String queue,
      IdempotentConsumer<?> pipeline) {
    RabbitConsumerConfig.Builder builder = RabbitConsumerConfig.builder(queue)
        .declareTopology(c.isDeclareTopology())
        .connectionName("idem-" + name);
    if (c.getUri() != null) {
      builder.uri(c.getUri());
    }
    if (c.getDeadLetter() != null) {
      builder.deadLetterQueue(c.getDeadLetter());
    }
    if (c.getPrefetch() != null) {
      builder.prefetch(c.getPrefetch());
    }
    if (c.getConcurrency() != null) {
      builder.concurrency(c.getConcurrency());
    }
    if (c.getMaxBatchSize() != null) {
      builder.maxBatchSize(c.getMaxBatchSize());
    }
    if (c.getShutdownTimeout() != null) {
      builder.shutdownTimeout(c.getShutdownTimeout());
    }
    return RabbitIdempotentConsumer.create(builder.build(), pipeline);
  }

  static BrokerConsumer sqs(IdemProperties.Consumer c, String queueUrl, IdempotentConsumer<?> pipeline) {
    SqsConsumerConfig.Builder builder = SqsConsumerConfig.builder(queueUrl)
        .deadLetterQueueUrl(c.getDeadLetter())
        .endpoint(c.getEndpoint())
        .region(c.getRegion());
    if (c.getConcurrency() != null) {
      builder.concurrency(c.getConcurrency());
    }
    if (c.getMaxBatchSize() != null) {
      builder.maxBatchSize(c.getMaxBatchSize());
    }
    if (c.getShutdownTimeout() != null) {
      builder.shutdownTimeout(c.getShutdownTimeout());
    }
    return SqsIdempotentConsumer.create(builder.build(), pipeline);
  }

  static BrokerConsumer jms(IdemProperties.Consumer c, String queue, IdempotentConsumer<?> pipeline,
      jakarta.jms.ConnectionFactory connectionFactory) {
    JmsConsumerConfig.Builder builder = JmsConsumerConfig.builder(connectionFactory, queue,
        c.getDeadLetter() != null ? c.getDeadLetter() : queue + JmsDeliveries.DEAD_LETTER_SUFFIX);
    if (c.getConcurrency() != null) {
      builder.concurrency(c.getConcurrency());
    }
    if (c.getMaxBatchSize() != null) {
      builder.maxBatchSize(c.getMaxBatchSize());
    }
    if (c.getShutdownTimeout() != null) {
      builder.shutdownTimeout(c.getShutdownTimeout());
    }
    return JmsIdempotentConsumer.create(builder.build(), pipeline);
  }
}
