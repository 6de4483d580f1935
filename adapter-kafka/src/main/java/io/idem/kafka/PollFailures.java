package io.idem.kafka;

import java.util.Optional;
import org.apache.kafka.clients.consumer.InvalidOffsetException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InconsistentGroupProtocolException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidGroupIdException;
import org.apache.kafka.common.errors.InvalidRegularExpression;
import org.apache.kafka.common.errors.InvalidSessionTimeoutException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.UnreleasedInstanceIdException;
import org.apache.kafka.common.errors.UnsupportedAssignorException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * Which errors thrown by {@code KafkaConsumer.poll} cannot heal by polling again, and what the
 * operator has to do about each. Stateless; thread-safe.
 *
 * <p>Fatal — the consumer stops (the same poll would fail forever until someone changes a setting,
 * an ACL or the group's offsets):
 *
 * <ul>
 *   <li>{@link InvalidConfigurationException} and its subclasses (kafka-clients 4.x): every
 *       {@link AuthorizationException} (topic, group, cluster), every {@link
 *       AuthenticationException} (SASL, SSL), {@link UnsupportedVersionException} (a broker too old
 *       for a setting, e.g. {@code group.protocol=consumer} before Kafka 4.0), {@code
 *       InvalidTopicException};
 *   <li>{@link InvalidOffsetException} ({@code NoOffsetForPartitionException}, {@code
 *       OffsetOutOfRangeException}, {@code LogTruncationException}): thrown only with {@code
 *       auto.offset.reset=none}, which asks the application to decide;
 *   <li>the group membership refused for good: {@link FencedInstanceIdException} and {@link
 *       UnreleasedInstanceIdException} (another live member uses the same {@code
 *       group.instance.id}), {@link InvalidGroupIdException}, {@link GroupMaxSizeReachedException},
 *       {@link InconsistentGroupProtocolException}, {@link UnsupportedAssignorException}, {@link
 *       InvalidSessionTimeoutException}, {@link InvalidRegularExpression}, {@link
 *       SecurityDisabledException}.
 * </ul>
 *
 * <p>Everything else — {@link RetriableException}s (a leader moving, a coordinator not available, a
 * timeout) and any other {@link KafkaException} — is treated as transient: the loop logs it and
 * polls again after a pause, as before.
 */
final class PollFailures {
  private PollFailures() {}

  /**
   * What to do about {@code error} when it cannot heal by polling again; empty when it may.
   *
   * @param groupId the consumer's {@code group.id}, named in the advice
   */
  static Optional<String> fatalAdvice(KafkaException error, String groupId) {
    if (error instanceof RetriableException) {
      return Optional.empty();
    }
    if (error instanceof InvalidOffsetException invalid) {
      return Optional.of("partitions " + invalid.partitions() + " have no valid committed offset for group '"
          + groupId + "' and auto.offset.reset is none: reset the group's offsets (kafka-consumer-groups.sh"
          + " --group " + groupId + " --reset-offsets ... --execute) or set auto.offset.reset to earliest or"
          + " latest, then start the consumer again");
    }
    if (error instanceof AuthorizationException) {
      return Optional.of("the principal is not authorized (" + error.getMessage() + "): grant it READ on"
          + " the topics and on group '" + groupId + "' (and DESCRIBE on the topics), then start the"
          + " consumer again");
    }
    if (error instanceof AuthenticationException) {
      return Optional.of("the brokers refused the credentials: fix the security settings (sasl.*, ssl.*)"
          + " and start the consumer again");
    }
    if (error instanceof FencedInstanceIdException || error instanceof UnreleasedInstanceIdException) {
      return Optional.of("another member of group '" + groupId + "' uses the same group.instance.id: give"
          + " every consumer instance its own group.instance.id, then start this one again");
    }
    if (error instanceof UnsupportedVersionException) {
      return Optional.of("the brokers do not support what this consumer asks (" + error.getMessage()
          + "): upgrade the brokers or drop the setting (e.g. group.protocol=consumer needs Kafka 4.0+)");
    }
    if (error instanceof InvalidGroupIdException) {
      return Optional.of("group id '" + groupId + "' is not valid: set a non-empty groupId");
    }
    if (error instanceof GroupMaxSizeReachedException) {
      return Optional.of("group '" + groupId + "' has reached the brokers' group.max.size: run fewer"
          + " instances or raise the limit");
    }
    if (error instanceof InvalidConfigurationException
        || error instanceof InconsistentGroupProtocolException
        || error instanceof UnsupportedAssignorException
        || error instanceof InvalidSessionTimeoutException
        || error instanceof InvalidRegularExpression
        || error instanceof SecurityDisabledException) {
      return Optional.of("the brokers refuse this consumer's configuration (" + error.getMessage()
          + "): fix the setting and start the consumer again");
    }
    return Optional.empty();
  }
}
