/**
 * The Jakarta Messaging (JMS 3.1) adapter: {@link io.idem.jms.JmsIdempotentConsumer} consumes a
 * queue through an idempotent pipeline and acknowledges (commits the transacted session) only
 * after the database transaction committed. Vendor-neutral: it needs only {@code jakarta.jms-api}
 * and any {@code jakarta.jms.ConnectionFactory}; tested on ActiveMQ Artemis.
 *
 * <p>Producers put the idempotency key in the JMS String property
 * {@value io.idem.jms.JmsHeaderNames#DEFAULT_KEY_PROPERTY} (JMS property names cannot contain
 * {@code -}; see {@link io.idem.jms.JmsHeaderNames}).
 */
@NullMarked
package io.idem.jms;

import org.jspecify.annotations.NullMarked;
