/**
 * Amazon SQS adapter: {@link io.idem.sqs.SqsIdempotentConsumer} long-polls a standard or FIFO
 * queue with the AWS SDK v2 {@link software.amazon.awssdk.services.sqs.SqsClient}, runs each
 * message through an {@link io.idem.IdempotentConsumer} pipeline and deletes it only after the
 * store transaction committed, with the receipt handle of that delivery. Configure it with
 * {@link io.idem.sqs.SqsConsumerConfig}; messages arrive as {@link io.idem.sqs.SqsInboundMessage}.
 */
@NullMarked
package io.idem.sqs;

import org.jspecify.annotations.NullMarked;
