/** RabbitMQ adapter (issue 3): not built yet. */
@NullMarked
package io.idem.rabbitmq;

import org.jspecify.annotations.NullMarked;
