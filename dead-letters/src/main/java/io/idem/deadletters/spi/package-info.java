/**
 * For implementers of a dead-letter destination: {@link
 * io.idem.deadletters.spi.DeadLetterDestination} is what {@link
 * io.idem.deadletters.DeadLetterOperations} needs of a broker.
 */
@NullMarked
package io.idem.deadletters.spi;

import org.jspecify.annotations.NullMarked;
