/**
 * Operating Idem's dead letters: {@link io.idem.deadletters.DeadLetterOperations} lists and groups
 * the dead letters of one destination, shows one, replays a selection through the
 * processed-events store (the key's dead-letter decision released first, the copy republished to
 * its source and confirmed, then the dead letter removed) and discards with a record of who and
 * why. One {@link io.idem.deadletters.spi.DeadLetterDestination} per broker:
 * {@link io.idem.deadletters.KafkaDeadLetters}, {@link io.idem.deadletters.RabbitDeadLetters},
 * {@link io.idem.deadletters.SqsDeadLetters}, {@link io.idem.deadletters.JmsDeadLetters}; each
 * needs its broker's client on the class path. The rules: docs/DEAD-LETTERS.md.
 */
@NullMarked
package io.idem.deadletters;

import org.jspecify.annotations.NullMarked;
