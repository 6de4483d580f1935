package io.idem.deadletters.spi;

import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * One broker's dead-letter destination, as {@link io.idem.deadletters.DeadLetterOperations} uses
 * it: read the dead letters without removing any, and hold them one at a time so that one can be
 * republished to its source and then removed. The safety rules (docs/DEAD-LETTERS.md) an
 * implementation keeps:
 *
 * <ul>
 *   <li>{@link #browse} removes nothing and uses up no broker delivery limit: a dead letter read
 *       any number of times is still there, and never moved or dropped by the broker for it;
 *   <li>{@link Held#republish} returns only once the broker has stored the copy (Kafka: the send
 *       acknowledged; RabbitMQ: the publish confirmed and routed; SQS: {@code SendMessage}
 *       answered) — or, on JMS, sent it in the transaction that {@link Held#remove} commits with
 *       the receive of the dead letter;
 *   <li>{@link Held#remove} is the only way a dead letter goes, and a dead letter that was not
 *       removed stays where it was when {@link #process} returns or the process dies.
 * </ul>
 *
 * <p>Not thread-safe: one caller at a time. Close it to release its broker connections.
 */
public interface DeadLetterDestination extends AutoCloseable {

  /** {@code kafka}, {@code rabbitmq}, {@code sqs} or {@code jms}. */
  String broker();

  /** The dead-letter destination: topic, queue name, or SQS queue URL. */
  String name();

  /**
   * Up to {@code max} dead letters, in the destination's order, read without removing any.
   *
   * @throws DeadLetterException when the destination does not exist or cannot be read
   */
  List<DeadLetter> browse(int max);

  /**
   * Hands up to {@code max} dead letters, in the destination's order, one at a time to {@code
   * work}, each held for it (hidden from other readers where the broker can hide a message) until
   * {@code work} returns. What {@code work} does not remove stays; when {@code work} throws an
   * exception for one, the others are still handed over (reporting it is the caller's); an {@link
   * Error} stops at once, leaving every dead letter not removed where it was.
   *
   * @throws DeadLetterException when the destination does not exist or cannot be read
   */
  void process(int max, Work work);

  /**
   * Where a replay of {@code deadLetter} goes: its source, unless the destination was given
   * another target. Checks that it exists.
   *
   * @throws DeadLetterException naming the dead letter and the fix when there is no source to
   *     republish to (unknown, or gone)
   */
  String target(DeadLetter deadLetter);

  /**
   * Gives the destination the record of dead letters already dealt with, for a broker that cannot
   * remove one dead letter out of order (a Kafka topic, whose consumer group offset can only pass
   * records in order): such a destination leaves those out of {@link #browse} and {@link
   * #process}. {@code settled} maps dead-letter ids of this destination to the ones replayed or
   * discarded. The default ignores it: the other brokers really remove a dead letter.
   */
  default void settledBy(Function<Collection<String>, Set<String>> settled) {}

  @Override
  void close();

  /** What {@link #process} runs for each dead letter. */
  @FunctionalInterface
  interface Work {
    /** Deals with one held dead letter; throwing leaves it where it is. */
    void accept(Held held) throws Exception;
  }

  /** A dead letter held for {@link Work}. */
  interface Held {
    /** The dead letter. */
    DeadLetter deadLetter();

    /**
     * Republishes the dead letter to {@code target} as its original — same payload, the record key
     * on Kafka, its headers without {@link io.idem.deadletters.DeadLetterHeaders#DEAD_LETTER_ONLY}
     * — plus {@code headers}, with a new broker message id where the broker would otherwise keep
     * the old one (RabbitMQ {@code message-id}); returns once the copy is stored (the class rules).
     *
     * @throws DeadLetterException when the broker did not store the copy: nothing was republished
     */
    void republish(String target, Map<String, String> headers);

    /**
     * Removes the dead letter (Kafka: marks it done, and commits the tool's group offset past it
     * once every record before it is done; RabbitMQ: {@code basic.ack}; SQS: {@code
     * DeleteMessage}; JMS: receives it and commits, with the republished copy).
     *
     * @throws DeadLetterException when it could not be removed (it stays)
     */
    void remove();
  }
}
