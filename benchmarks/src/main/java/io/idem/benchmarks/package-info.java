/**
 * Idem's benchmarks: JMH benchmarks of the processing pipeline, and the side-by-side command
 * ({@link io.idem.benchmarks.SideBySide}: Idem against plain consumers on Kafka, RabbitMQ, SQS or
 * JMS, one PostgreSQL); results in BENCHMARKS.md.
 */
@NullMarked
package io.idem.benchmarks;

import org.jspecify.annotations.NullMarked;
