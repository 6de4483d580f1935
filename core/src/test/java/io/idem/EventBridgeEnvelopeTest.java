package io.idem;

import static io.idem.EnvelopeFormatTest.delivery;
import static io.idem.EnvelopeFormatTest.found;
import static io.idem.EnvelopeFormatTest.opened;
import static io.idem.EnvelopeFormatTest.rejected;
import static io.idem.EnvelopeFormatTest.text;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** {@link EnvelopeFormat#eventBridge()}: the handler sees {@code detail}; EventBridge's own ids are not the event. */
class EventBridgeEnvelopeTest {
  private final EnvelopeFormat eventBridge = EnvelopeFormat.eventBridge();

  static String event(String id, String time) {
    return "{\"version\":\"0\",\"id\":\"" + id + "\",\"detail-type\":\"OrderPaid\","
        + "\"source\":\"com.example.orders\",\"account\":\"123456789012\",\"time\":\"" + time + "\","
        + "\"region\":\"eu-west-1\",\"resources\":[],\"detail\":{\"orderId\":\"o-42\",\"amount\":12.5}}";
  }

  @Test
  void theHandlerSeesTheDetailAndTheKeyIsABusinessIdInIt() {
    InboundMessage opened = opened(eventBridge, delivery(event("eb-1", "2026-12-01T08:00:00Z")));
    assertThat(text(opened)).isEqualTo("{\"orderId\":\"o-42\",\"amount\":12.5}");
    assertThat(found(IdempotencyKeyExtractor.jsonPointer("/orderId"), opened).value()).isEqualTo("o-42");
    assertThat(opened.headers()).containsEntry("eventbridge-id", "eb-1")
        .containsEntry("eventbridge-detail-type", "OrderPaid").containsEntry("eventbridge-source", "com.example.orders")
        .containsEntry("eventbridge-region", "eu-west-1");
  }

  @Test
  void aRePutHasANewIdAndTimeButTheSameDetail() {
    InboundMessage first = opened(eventBridge, delivery(event("eb-1", "2026-12-01T08:00:00Z")));
    InboundMessage rePut = opened(eventBridge, delivery(event("eb-2", "2026-12-01T08:00:05Z")));
    assertThat(rePut.payload()).isEqualTo(first.payload());
    assertThat(rePut.header("eventbridge-id")).isNotEqualTo(first.header("eventbridge-id"));
  }

  @Test
  void notPartOfTheStandardFormatsAndRejectedWithoutDetail() {
    assertThat(EnvelopeFormat.standard().unwrap(delivery(event("eb-1", "t"))))
        .isInstanceOf(Unwrapping.NotRecognized.class);
    String noDetail = event("eb-1", "t").replace(",\"detail\":{\"orderId\":\"o-42\",\"amount\":12.5}", "");
    assertThat(rejected(eventBridge, delivery(noDetail))).contains("'detail' is missing");
  }
}
