/**
 * RabbitMQ adapter: {@link io.idem.rabbitmq.RabbitIdempotentConsumer} consumes a queue with manual
 * acknowledgements on {@code com.rabbitmq:amqp-client} 5.x and acks a delivery only after the
 * {@link io.idem.IdempotentConsumer} pipeline committed it, on the channel that received it.
 * Configure it with {@link io.idem.rabbitmq.RabbitConsumerConfig}.
 */
@NullMarked
package io.idem.rabbitmq;

import org.jspecify.annotations.NullMarked;
