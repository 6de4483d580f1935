/** Kafka adapter: not built yet. */
@NullMarked
package io.idem.kafka;

import org.jspecify.annotations.NullMarked;
