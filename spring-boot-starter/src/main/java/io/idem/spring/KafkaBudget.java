package io.idem.spring;

import java.time.Duration;

/**
 * How long one call of an {@link Idempotent} {@code @KafkaListener} may keep retrying before it
 * must hand the record back to the container: Kafka ends a consumer's membership when it does not
 * poll within {@code max.poll.interval.ms}, and the container polls only between the calls for the
 * records of one poll. A record listener gets {@code max.poll.interval.ms / max.poll.records} per
 * record (every record of a poll may need it), a batch listener half of {@code
 * max.poll.interval.ms} for the poll. Immutable.
 *
 * @param perCall the time a call may spend waiting between its attempts
 * @param maxPollInterval the consumer's {@code max.poll.interval.ms}
 * @param maxPollRecords the consumer's {@code max.poll.records}
 */
record KafkaBudget(Duration perCall, Duration maxPollInterval, int maxPollRecords) {
  /** Kafka's default {@code max.poll.interval.ms}: 5 minutes. */
  static final Duration DEFAULT_MAX_POLL_INTERVAL = Duration.ofMinutes(5);
  /** Kafka's default {@code max.poll.records}: {@value}. */
  static final int DEFAULT_MAX_POLL_RECORDS = 500;

  static KafkaBudget forRecords(Duration maxPollInterval, int maxPollRecords) {
    return new KafkaBudget(maxPollInterval.dividedBy(Math.max(1, maxPollRecords)), maxPollInterval,
        maxPollRecords);
  }

  static KafkaBudget forBatches(Duration maxPollInterval, int maxPollRecords) {
    return new KafkaBudget(maxPollInterval.dividedBy(2), maxPollInterval, maxPollRecords);
  }
}
