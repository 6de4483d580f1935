/**
 * The Kafka adapter: {@link io.idem.kafka.KafkaIdempotentConsumer} feeds Kafka records to an
 * {@link io.idem.IdempotentConsumer} pipeline and commits each record's offset only after the
 * pipeline's database transaction ended, configured by {@link io.idem.kafka.KafkaConsumerConfig};
 * {@link io.idem.kafka.KafkaInboundMessage} is the record as the pipeline sees it.
 */
@NullMarked
package io.idem.kafka;

import org.jspecify.annotations.NullMarked;
