package io.idem.jms;

/**
 * The adapter compatibility kit, its crash matrix included, on ActiveMQ Artemis with the default
 * configuration: batch mode ({@link JmsConsumerConfig#DEFAULT_MAX_BATCH_SIZE}), transacted, two
 * worker sessions; per-message mode is {@link JmsAdapterCompatibilityPerMessageIT}.
 */
class JmsAdapterCompatibilityIT extends JmsCompatibilityKit {}
