package io.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.CoordinatorNotAvailableException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InconsistentGroupProtocolException;
import org.apache.kafka.common.errors.InvalidGroupIdException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnreleasedInstanceIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class PollFailuresTest {
  private static final TopicPartition P0 = new TopicPartition("orders", 0);

  static Stream<KafkaException> cannotHeal() {
    return Stream.of(
        new TopicAuthorizationException(Set.of("orders")),
        new GroupAuthorizationException("not authorized", "g"),
        new ClusterAuthorizationException("cluster"),
        new SaslAuthenticationException("bad password"),
        new FencedInstanceIdException("fenced"),
        new UnreleasedInstanceIdException("unreleased"),
        new InvalidGroupIdException("empty"),
        new GroupMaxSizeReachedException("full"),
        new InconsistentGroupProtocolException("protocol"),
        new UnsupportedVersionException("old broker"),
        new InvalidTopicException("bad name"),
        new NoOffsetForPartitionException(P0),
        new OffsetOutOfRangeException("out of range", java.util.Map.of(P0, 5L)),
        new LogTruncationException("truncated", java.util.Map.of(P0, 5L), java.util.Map.of()));
  }

  static Stream<KafkaException> mayHeal() {
    return Stream.of(
        new CoordinatorNotAvailableException("moving"),
        new NotLeaderOrFollowerException("moving"),
        new UnknownTopicOrPartitionException("not yet"),
        new DisconnectException("gone"),
        new TimeoutException("slow"),
        new KafkaException("something else"));
  }

  @ParameterizedTest
  @MethodSource("cannotHeal")
  void errorsThatCannotHealStopTheConsumerWithAdvice(KafkaException error) {
    assertThat(PollFailures.fatalAdvice(error, "g")).hasValueSatisfying(advice -> assertThat(advice).isNotBlank());
  }

  @ParameterizedTest
  @MethodSource("mayHeal")
  void retriableAndUnknownErrorsArePolledAgain(KafkaException error) {
    assertThat(PollFailures.fatalAdvice(error, "g")).isEmpty();
  }

  @ParameterizedTest
  @MethodSource("cannotHeal")
  void adviceNamesTheFix(KafkaException error) {
    String advice = PollFailures.fatalAdvice(error, "g").orElseThrow();
    assertThat(advice).containsAnyOf("grant", "credentials", "group.instance.id", "groupId", "group.max.size",
        "upgrade", "fix the setting", "reset-offsets");
  }
}
