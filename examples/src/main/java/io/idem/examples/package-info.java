/**
 * The README's quick starts as complete programs, one per broker, compiled by the build so that
 * they stay correct as written: {@link io.idem.examples.Billing} builds the MyBatis
 * {@code SqlSessionFactory} and the idempotent pipeline every broker shares, and
 * {@code KafkaQuickStart}, {@code RabbitQuickStart}, {@code SqsQuickStart} and
 * {@code JmsQuickStart} each run it behind that broker's consumer. Not deployed.
 */
@NullMarked
package io.idem.examples;

import org.jspecify.annotations.NullMarked;
