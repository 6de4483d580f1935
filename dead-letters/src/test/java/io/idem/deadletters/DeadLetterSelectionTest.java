package io.idem.deadletters;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.DeadLetterCause;
import io.idem.DeadLetterReason;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Reading Idem's reason back from headers, selecting and grouping dead letters. */
class DeadLetterSelectionTest {
  private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");

  private static DeadLetter idems(String id, DeadLetterCause cause, String key, Instant at, String exception) {
    Map<String, String> headers = new HashMap<>(new DeadLetterReason(cause, "failed", "billing", key, 1, exception).toHeaders());
    return new DeadLetter(id, "kafka", "orders.DLT", "orders", headers, new byte[] {1}, null, at,
        DeadLetterHeaders.reason(headers::get), DeadLetterHeaders.replayCount(headers::get));
  }

  private static DeadLetter brokerMade(String id) {
    return new DeadLetter(id, "rabbitmq", "orders.dlq", "orders", Map.of("x-first-death-reason", "delivery_limit"),
        new byte[0], null, null, null, 0);
  }

  @Test
  void theReasonIsReadBackFromTheHeadersTheAdaptersWriteAndABrokerMadeOneHasNone() {
    DeadLetterReason reason = new DeadLetterReason(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "attempt 5 of 5", "billing",
        "order-1", 5, "java.io.IOException");
    Map<String, String> headers = new HashMap<>(reason.toHeaders());
    assertThat(DeadLetterHeaders.reason(headers::get)).isEqualTo(reason);
    assertThat(DeadLetterHeaders.replayCount(headers::get)).isZero();
    headers.put(DeadLetterHeaders.REPLAY_COUNT, "2");
    assertThat(DeadLetterHeaders.replayCount(headers::get)).isEqualTo(2);
    headers.put(DeadLetterHeaders.REPLAY_COUNT, "many");
    assertThat(DeadLetterHeaders.replayCount(headers::get)).isZero();

    assertThat(DeadLetterHeaders.reason(Map.of("x-death", "…")::get)).isNull();
    assertThat(DeadLetterHeaders.reason(Map.of(DeadLetterReason.HEADER_CAUSE, "NON_RETRYABLE")::get))
        .as("no consumer group").isNull();
    assertThat(DeadLetterHeaders.reason(Map.of(DeadLetterReason.HEADER_CAUSE, "EXPIRED",
        DeadLetterReason.HEADER_CONSUMER_GROUP, "billing")::get)).as("unknown cause").isNull();
  }

  @Test
  void theHeaderNamesAreTheAdaptersOwn() {
    assertThat(DeadLetterHeaders.ORIGINAL_TOPIC).isEqualTo(io.idem.kafka.KafkaIdempotentConsumer.HEADER_ORIGINAL_TOPIC);
    assertThat(DeadLetterHeaders.ORIGINAL_PARTITION)
        .isEqualTo(io.idem.kafka.KafkaIdempotentConsumer.HEADER_ORIGINAL_PARTITION);
    assertThat(DeadLetterHeaders.ORIGINAL_OFFSET).isEqualTo(io.idem.kafka.KafkaIdempotentConsumer.HEADER_ORIGINAL_OFFSET);
    assertThat(DeadLetterHeaders.ORIGINAL_TIMESTAMP)
        .isEqualTo(io.idem.kafka.KafkaIdempotentConsumer.HEADER_ORIGINAL_TIMESTAMP);
    assertThat(DeadLetterHeaders.ORIGINAL_MESSAGE_ID).isEqualTo(io.idem.jms.JmsAcknowledgement.HEADER_ORIGINAL_MESSAGE_ID);
    assertThat(DeadLetterHeaders.ORIGINAL_QUEUE).isEqualTo(io.idem.jms.JmsAcknowledgement.HEADER_ORIGINAL_QUEUE);
    assertThat(DeadLetterHeaders.jmsName(DeadLetterHeaders.REPLAY_COUNT))
        .isEqualTo(io.idem.jms.JmsHeaderNames.toPropertyName(DeadLetterHeaders.REPLAY_COUNT));
  }

  @Test
  void everyCriterionMustMatchAndATimeCriterionNeverTakesAnUnknownTime() {
    DeadLetter a = idems("orders.DLT-0@1", DeadLetterCause.NON_RETRYABLE, "order-17", T0, "x.Poison");
    DeadLetter b = idems("orders.DLT-0@2", DeadLetterCause.MAX_ATTEMPTS_EXCEEDED, "order-2", T0.plusSeconds(60), null);
    DeadLetter c = brokerMade("sha256:0011");

    assertThat(DeadLetterSelection.all().matches(c)).isTrue();
    DeadLetterSelection byKey = DeadLetterSelection.builder().keyPattern("order-1?").build();
    assertThat(List.of(a, b, c)).filteredOn(byKey::matches).containsExactly(a);
    DeadLetterSelection byCause = DeadLetterSelection.builder().causes(Set.of(DeadLetterCause.MAX_ATTEMPTS_EXCEEDED)).build();
    assertThat(List.of(a, b, c)).filteredOn(byCause::matches).containsExactly(b);
    DeadLetterSelection since = DeadLetterSelection.builder().since(T0.plusSeconds(1)).build();
    assertThat(List.of(a, b, c)).filteredOn(since::matches).containsExactly(b);
    DeadLetterSelection both = DeadLetterSelection.builder().ids(List.of(a.id(), b.id())).until(T0.plusSeconds(1)).build();
    assertThat(List.of(a, b, c)).filteredOn(both::matches).containsExactly(a);
    DeadLetterSelection group = DeadLetterSelection.builder().groups(List.of(DeadLetterGroup.idOf(c))).build();
    assertThat(List.of(a, b, c)).filteredOn(group::matches).containsExactly(c);
    assertThat(DeadLetterSelection.builder().keyPattern("order.1*").build().matches(a)).as("'.' is literal").isFalse();

    assertThatThrownBy(() -> DeadLetterSelection.builder().build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least one criterion");
    assertThatThrownBy(() -> DeadLetterSelection.builder().since(T0).until(T0).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("since must be before until");
  }

  @Test
  void groupsCountByCauseSourceExceptionAndConsumerGroupWithFirstAndLastTimes() {
    DeadLetter a = idems("1", DeadLetterCause.NON_RETRYABLE, "k1", T0.plusSeconds(30), "x.Poison");
    DeadLetter b = idems("2", DeadLetterCause.NON_RETRYABLE, "k2", T0, "x.Poison");
    DeadLetter c = idems("3", DeadLetterCause.NON_RETRYABLE, "k3", T0, "x.Other");
    List<DeadLetterGroup> groups = DeadLetterGroup.of(List.of(a, b, c, brokerMade("4")));
    assertThat(groups).hasSize(3);
    DeadLetterGroup poison = groups.get(0);
    assertThat(poison.count()).isEqualTo(2);
    assertThat(poison.exceptionClass()).isEqualTo("x.Poison");
    assertThat(poison.first()).isEqualTo(T0);
    assertThat(poison.last()).isEqualTo(T0.plusSeconds(30));
    assertThat(poison.id()).isEqualTo(DeadLetterGroup.idOf(a)).hasSize(8);
    assertThat(groups).filteredOn(g -> g.cause() == null).singleElement()
        .satisfies(g -> assertThat(g.first()).isNull());
  }

  @Test
  void replayOptionsNameTheSettingAndTheValue() {
    assertThatThrownBy(() -> ReplayOptions.builder().maxReplays(0).build())
        .hasMessage("maxReplays must be >= 1, but was 0");
    assertThatThrownBy(() -> ReplayOptions.builder().ratePerSecond(-1).build())
        .hasMessage("ratePerSecond must be >= 0 (0: no limit), but was -1.0");
  }
}
