package io.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class IdempotencyKeyExtractorTest {

  private static InboundMessage.Builder message(String payload) {
    return InboundMessage.builder("orders", payload.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void headerIsFound() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults()
        .extract(message("{}").header("idempotency-key", "order-42").build());
    assertThat(result).isEqualTo(new KeyExtraction.Found("order-42", KeySource.HEADER, "header 'idempotency-key'"));
  }

  @Test
  void blankHeaderIsRejectedNotSkipped() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults()
        .orElse(IdempotencyKeyExtractor.brokerMessageId())
        .extract(message("{}").header("idempotency-key", "  ").brokerMessageId("m-1").build());
    assertThat(result).isInstanceOf(KeyExtraction.Rejected.class);
    assertThat(((KeyExtraction.Rejected) result).reason()).contains("blank");
  }

  @Test
  void undecodableHeaderIsRejected() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults()
        .extract(message("{}").undecodableHeader("idempotency-key").build());
    assertThat(((KeyExtraction.Rejected) result).reason()).contains("not valid UTF-8");
  }

  @Test
  void cloudEventsSourceAndIdMakeTheKey() {
    for (String prefix : new String[] {"ce_", "ce-", "cloudEvents:", "cloudEvents_"}) {
      KeyExtraction result = IdempotencyKeyExtractor.defaults().extract(
          message("{}").header(prefix + "id", "A-1").header(prefix + "source", "/shop/orders").build());
      assertThat(result).as(prefix).isInstanceOf(KeyExtraction.Found.class);
      KeyExtraction.Found found = (KeyExtraction.Found) result;
      assertThat(found.value()).isEqualTo("/shop/orders A-1");
      assertThat(found.source()).isEqualTo(KeySource.CLOUDEVENTS);
    }
  }

  @Test
  void cloudEventsIdWithoutSourceIsRejected() {
    KeyExtraction result = IdempotencyKeyExtractor.cloudEvents().extract(message("{}").header("ce_id", "1").build());
    assertThat(((KeyExtraction.Rejected) result).reason()).contains("ce_source");
  }

  @Test
  void headerWinsOverCloudEvents() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults().extract(
        message("{}").header("ce_id", "1").header("ce_source", "s").header("idempotency-key", "k").build());
    assertThat(((KeyExtraction.Found) result).value()).isEqualTo("k");
  }

  @Test
  void jsonPointerReadsScalars() {
    IdempotencyKeyExtractor pointer = IdempotencyKeyExtractor.jsonPointer("/order/id");
    assertThat(((KeyExtraction.Found) pointer.extract(message("{\"order\":{\"id\":\"o-7\"}}").build())).value())
        .isEqualTo("o-7");
    assertThat(((KeyExtraction.Found) pointer.extract(message("{\"order\":{\"id\":12345678901234}}").build())).value())
        .isEqualTo("12345678901234");
    KeyExtraction.Found found = (KeyExtraction.Found) pointer.extract(message("{\"order\":{\"id\":\"x\"}}").build());
    assertThat(found.source()).isEqualTo(KeySource.PAYLOAD);
  }

  @Test
  void jsonPointerOnMalformedJsonIsRejected() {
    KeyExtraction result = IdempotencyKeyExtractor.jsonPointer("/id").extract(message("{\"id\": ").build());
    assertThat(((KeyExtraction.Rejected) result).reason()).contains("not valid JSON");
  }

  @Test
  void jsonPointerOnEmptyPayloadIsRejected() {
    KeyExtraction result = IdempotencyKeyExtractor.jsonPointer("/id").extract(message("").build());
    assertThat(result).isInstanceOf(KeyExtraction.Rejected.class);
  }

  @Test
  void jsonPointerMissingFieldIsAbsentAndObjectIsRejected() {
    IdempotencyKeyExtractor pointer = IdempotencyKeyExtractor.jsonPointer("/id");
    assertThat(pointer.extract(message("{\"other\":1}").build())).isInstanceOf(KeyExtraction.Absent.class);
    assertThat(pointer.extract(message("{\"id\":null}").build())).isInstanceOf(KeyExtraction.Absent.class);
    assertThat(pointer.extract(message("{\"id\":{\"a\":1}}").build())).isInstanceOf(KeyExtraction.Rejected.class);
  }

  @Test
  void invalidPointerIsRefusedAtConfiguration() {
    assertThatThrownBy(() -> IdempotencyKeyExtractor.jsonPointer("id"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'id'");
  }

  @Test
  void brokerIdOnlyWhenConfiguredAndAfterTheBusinessKeys() {
    InboundMessage noKey = message("{}").brokerMessageId("orders-0@17").build();
    assertThat(IdempotencyKeyExtractor.defaults().extract(noKey)).isInstanceOf(KeyExtraction.Absent.class);
    KeyExtraction fallback = IdempotencyKeyExtractor.defaults().orElse(IdempotencyKeyExtractor.brokerMessageId()).extract(noKey);
    assertThat(fallback).isEqualTo(new KeyExtraction.Found("orders-0@17", KeySource.BROKER_ID, "broker message id (fallback)"));
  }

  @Test
  void absentChainExplainsEverythingTried() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults().extract(message("{}").build());
    assertThat(((KeyExtraction.Absent) result).detail()).contains("idempotency-key").contains("CloudEvents");
  }

  @Test
  void aNestedChainSaysNoKeyOnce() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults().orElse(IdempotencyKeyExtractor.jsonPointer("/orderId"))
        .extract(message("{}").build());
    String detail = ((KeyExtraction.Absent) result).detail();
    assertThat(detail).startsWith("no idempotency key: ").containsOnlyOnce("no idempotency key").contains("/orderId");
  }

  @Test
  void throwingExtractorBecomesRejection() {
    IdempotencyKeyExtractor broken = m -> {
      throw new IllegalStateException("bug");
    };
    KeyExtraction result = IdempotencyKeyExtractor.firstOf(broken).extract(message("{}").build());
    assertThat(((KeyExtraction.Rejected) result).reason()).contains("bug");
  }

  @Test
  void jsonPointerKeepsNumbersExactAndRefusesBooleansAndTrailingGarbage() {
    IdempotencyKeyExtractor pointer = IdempotencyKeyExtractor.jsonPointer("/orderId");
    assertThat(((KeyExtraction.Found) pointer.extract(message("{\"orderId\":1.0000000000000001}").build())).value())
        .isEqualTo("1.0000000000000001");
    assertThat(((KeyExtraction.Found) pointer.extract(message("{\"orderId\":123456789012345678901234567890}").build())).value())
        .isEqualTo("123456789012345678901234567890");
    assertThat(pointer.extract(message("{\"orderId\":true}").build())).isInstanceOf(KeyExtraction.Rejected.class);
    assertThat(pointer.extract(message("{\"orderId\":\"T1\"} this is not json").build()))
        .isInstanceOf(KeyExtraction.Rejected.class);
  }

  @Test
  void cloudEventsSourceWithASpaceIsRejectedNotJoinedIntoAnAmbiguousKey() {
    IdempotencyKeyExtractor cloudEvents = IdempotencyKeyExtractor.cloudEvents();
    KeyExtraction spaced = cloudEvents.extract(message("{}").header("ce_source", "urn:a b").header("ce_id", "1").build());
    KeyExtraction plain = cloudEvents.extract(message("{}").header("ce_source", "urn:a").header("ce_id", "b 1").build());
    assertThat(((KeyExtraction.Rejected) spaced).reason())
        .isEqualTo("CloudEvents header 'ce_source' must be a URI-reference without whitespace or control"
            + " characters, but has U+0020 at index 5");
    assertThat(((KeyExtraction.Found) plain).value()).isEqualTo("urn:a b 1");
  }

  @Test
  void cloudEventsSourceWithOtherWhitespaceOrControlCharactersIsRejected() {
    for (String source : new String[] {"urn:a\tb", "urn:a\u00A0b", "urn:a\u2028b", "urn:a\u0007b", "urn:a\u0085b"}) {
      KeyExtraction result = IdempotencyKeyExtractor.cloudEvents()
          .extract(message("{}").header("ce-source", source).header("ce-id", "1").build());
      assertThat(result).as(source).isInstanceOf(KeyExtraction.Rejected.class);
    }
  }

  @Test
  void extractorReturningNullInAChainBecomesRejection() {
    IdempotencyKeyExtractor broken = new IdempotencyKeyExtractor() {
      @Override
      public KeyExtraction extract(InboundMessage message) {
        return null;
      }

      @Override
      public String toString() {
        return "broken()";
      }
    };
    KeyExtraction result = IdempotencyKeyExtractor.firstOf(broken, IdempotencyKeyExtractor.brokerMessageId())
        .extract(message("{}").brokerMessageId("m-1").build());
    assertThat(((KeyExtraction.Rejected) result).reason()).isEqualTo("key extractor broken() returned null");
  }

  /** {@code message} as a broker that spells its headers {@code kind} would present it. */
  private static InboundMessage spelled(InboundMessage message, String kind, java.util.function.UnaryOperator<String> name) {
    return new InboundMessage() {
      @Override public String source() { return message.source(); }
      @Override public java.util.Map<String, String> headers() { return message.headers(); }
      @Override public java.util.Set<String> undecodableHeaders() { return message.undecodableHeaders(); }
      @Override public byte[] payload() { return message.payload(); }
      @Override public @org.jspecify.annotations.Nullable String brokerMessageId() { return message.brokerMessageId(); }
      @Override public int deliveryAttempt() { return message.deliveryAttempt(); }
      @Override public java.time.Instant receivedAt() { return message.receivedAt(); }
      @Override public String describeHeader(String header) { return kind + " '" + name.apply(header) + "'"; }
    };
  }

  @Test
  void aPlainMessageNamesItsKeySourceAsAHeader() {
    KeyExtraction result = IdempotencyKeyExtractor.defaults().extract(message("{}").build());

    assertThat(((KeyExtraction.Absent) result).detail()).isEqualTo("no idempotency key: no header 'idempotency-key';"
        + " no CloudEvents id (header 'ce_id', header 'ce-id', header 'cloudEvents:id', header 'cloudEvents_id')");
  }

  @Test
  void everyReasonNamesTheHeaderAsTheBrokerSpellsIt() {
    java.util.function.UnaryOperator<String> underscores = h -> h.replace('-', '_');
    InboundMessage keyless = spelled(message("{}").build(), "property", underscores);
    InboundMessage blank = spelled(message("{}").header("idempotency-key", " ").build(), "property", underscores);
    InboundMessage undecodable = spelled(message("{}").undecodableHeader("idempotency-key").build(), "message attribute",
        h -> h);
    InboundMessage found = spelled(message("{}").header("idempotency-key", "k").build(), "message attribute", h -> h);
    InboundMessage idOnly = spelled(message("{}").header("ce_id", "1").build(), "message attribute", h -> h);
    InboundMessage spacedSource = spelled(message("{}").header("ce_id", "1").header("ce_source", "a b").build(),
        "property", underscores);
    IdempotencyKeyExtractor defaults = IdempotencyKeyExtractor.defaults();

    assertThat(((KeyExtraction.Absent) defaults.extract(keyless)).detail()).isEqualTo("no idempotency key: no property"
        + " 'idempotency_key'; no CloudEvents id (property 'ce_id', property 'cloudEvents:id', property 'cloudEvents_id')");
    assertThat(((KeyExtraction.Rejected) defaults.extract(blank)).reason())
        .isEqualTo("property 'idempotency_key' is present but blank");
    assertThat(((KeyExtraction.Rejected) defaults.extract(undecodable)).reason())
        .isEqualTo("message attribute 'idempotency-key' is not valid UTF-8");
    assertThat(((KeyExtraction.Found) defaults.extract(found)).origin()).isEqualTo("message attribute 'idempotency-key'");
    assertThat(((KeyExtraction.Rejected) defaults.extract(idOnly)).reason())
        .isEqualTo("CloudEvents message attribute 'ce_id' is present but message attribute 'ce_source' is not: an id is"
            + " only unique within its source");
    assertThat(((KeyExtraction.Rejected) defaults.extract(spacedSource)).reason())
        .startsWith("CloudEvents property 'ce_source' must be a URI-reference");
  }
}
