package io.idem.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.idem.http.SignatureCheck.Failure;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Each scheme against its documented examples: GitHub's ("Validating webhook deliveries"),
 * the Standard Webhooks reference libraries' test vector, and for Stripe vectors computed from
 * its documented scheme ({@code t=}, {@code v1=} HMAC-SHA256 of {@code t.payload}) with {@code
 * openssl dgst -sha256 -hmac} — not with the code under test.
 */
class WebhookSignatureTest {

  private static Map<String, String> headers(String... pairs) {
    Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    for (int i = 0; i + 1 < pairs.length; i += 2) {
      map.put(pairs[i], pairs[i + 1]);
    }
    return map;
  }

  private static SignatureCheck check(WebhookSignature signature, Map<String, String> headers,
      String body, Instant now) {
    return signature.verify(headers::get, body.getBytes(StandardCharsets.UTF_8), now);
  }

  @Nested
  class GitHub {
    // docs.github.com, "Validating webhook deliveries", "Testing the webhook payload validation"
    static final String SECRET = "It's a Secret to Everybody";
    static final String PAYLOAD = "Hello, World!";
    static final String SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    @Test
    void theDocumentedExampleVerifies() {
      assertThat(check(WebhookSignature.github(SECRET), headers("X-Hub-Signature-256", SIGNATURE),
          PAYLOAD, Instant.now()).isValid()).isTrue();
    }

    @Test
    void anotherSecretOrBodyIsAMismatch() {
      assertThat(check(WebhookSignature.github("another secret"), headers("X-Hub-Signature-256", SIGNATURE),
          PAYLOAD, Instant.now()).failure()).isEqualTo(Failure.MISMATCH);
      assertThat(check(WebhookSignature.github(SECRET), headers("X-Hub-Signature-256", SIGNATURE),
          "Hello, World?", Instant.now()).failure()).isEqualTo(Failure.MISMATCH);
    }

    @Test
    void theOldSecretStillVerifiesDuringARotation() {
      assertThat(check(WebhookSignature.github("the new secret", SECRET),
          headers("X-Hub-Signature-256", SIGNATURE), PAYLOAD, Instant.now()).isValid()).isTrue();
    }

    @Test
    void sha1AloneIsAnUnknownSchemeAndNoHeaderIsMissing() {
      assertThat(check(WebhookSignature.github(SECRET), headers("X-Hub-Signature", "sha1=abc"),
          PAYLOAD, Instant.now()).failure()).isEqualTo(Failure.UNKNOWN_SCHEME);
      assertThat(check(WebhookSignature.github(SECRET), headers("X-Hub-Signature-256", "sha512=" + "0".repeat(64)),
          PAYLOAD, Instant.now()).failure()).isEqualTo(Failure.UNKNOWN_SCHEME);
      assertThat(check(WebhookSignature.github(SECRET), headers(), PAYLOAD, Instant.now()).failure())
          .isEqualTo(Failure.MISSING);
      assertThat(check(WebhookSignature.github(SECRET), headers("X-Hub-Signature-256", "sha256=zz"),
          PAYLOAD, Instant.now()).failure()).isEqualTo(Failure.MALFORMED);
    }
  }

  @Nested
  class StandardWebhooks {
    // the reference libraries' signing test (libraries/*/webhook_test: TestWebhookSign)
    static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    static final String ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    static final String TIMESTAMP = "1614265330";
    static final String PAYLOAD = "{\"test\": 2432232314}";
    static final String SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    static final Instant SIGNED_AT = Instant.ofEpochSecond(1614265330);
    // the libraries' "invalid signature" vector
    static final String WRONG = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";

    private Map<String, String> signed(String signature) {
      return headers("webhook-id", ID, "webhook-timestamp", TIMESTAMP, "webhook-signature", signature);
    }

    @Test
    void theSpecificationsVectorVerifiesWithAndWithoutThePrefix() {
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(SIGNATURE), PAYLOAD, SIGNED_AT).isValid()).isTrue();
      assertThat(check(WebhookSignature.standardWebhooks("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), signed(SIGNATURE),
          PAYLOAD, SIGNED_AT).isValid()).isTrue();
    }

    @Test
    void aListWithOtherVersionsAndWrongOnesStillFindsTheValidOne() {
      String list = WRONG + " v2," + SIGNATURE.substring(3) + " " + SIGNATURE + " " + WRONG;
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(list), PAYLOAD, SIGNED_AT).isValid()).isTrue();
    }

    @Test
    void theInvalidVectorIsAMismatchAndOnlyOtherVersionsAreAnUnknownScheme() {
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(WRONG), PAYLOAD, SIGNED_AT).failure())
          .isEqualTo(Failure.MISMATCH);
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed("v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw"),
          PAYLOAD, SIGNED_AT).failure()).isEqualTo(Failure.UNKNOWN_SCHEME);
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed("invalid_signature"), PAYLOAD, SIGNED_AT)
          .failure()).isEqualTo(Failure.MALFORMED);
    }

    @Test
    void aTimestampOutsideTheToleranceEitherWayIsStale() {
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(SIGNATURE), PAYLOAD,
          SIGNED_AT.plusSeconds(301)).failure()).isEqualTo(Failure.STALE);
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(SIGNATURE), PAYLOAD,
          SIGNED_AT.minusSeconds(301)).failure()).isEqualTo(Failure.STALE);
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), signed(SIGNATURE), PAYLOAD,
          SIGNED_AT.plusSeconds(299)).isValid()).isTrue();
    }

    @Test
    void theIdAndTimestampAreSigned() {
      Map<String, String> otherId = signed(SIGNATURE);
      otherId.put("webhook-id", "msg_other");
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), otherId, PAYLOAD, SIGNED_AT).failure())
          .isEqualTo(Failure.MISMATCH);
      Map<String, String> noId = signed(SIGNATURE);
      noId.remove("webhook-id");
      assertThat(check(WebhookSignature.standardWebhooks(SECRET), noId, PAYLOAD, SIGNED_AT).failure())
          .isEqualTo(Failure.MALFORMED);
    }

    @Test
    void aSecretThatIsNotBase64IsRefusedAtConstruction() {
      assertThatThrownBy(() -> WebhookSignature.standardWebhooks("whsec_not base64!"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secrets[0] must be base64");
    }
  }

  @Nested
  class Stripe {
    static final String CURRENT = "whsec_current_0b2f4e6a8c";
    static final String PREVIOUS = "whsec_previous_9d7c5b3a1e";
    static final String PAYLOAD = "{\"id\":\"evt_1Nidem\",\"object\":\"event\",\"type\":\"payment_intent.succeeded\"}";
    static final long T = 1700000000L;
    // printf '%s' "1700000000.$PAYLOAD" | openssl dgst -sha256 -hmac <secret>
    static final String V1_CURRENT = "6b38e91bb367a69a88e53c37d6b33acb1ab375dd2809ad27606d70686f9d6570";
    static final String V1_PREVIOUS = "da79a2769debd05956abe10a00cd538b00756a56c659fa2c8deac5868654a934";
    static final Instant NOW = Instant.ofEpochSecond(T + 10);

    private Map<String, String> signed(String header) {
      return headers("Stripe-Signature", header);
    }

    @Test
    void theComputedVectorVerifies() {
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + T + ",v1=" + V1_CURRENT), PAYLOAD, NOW)
          .isValid()).isTrue();
    }

    @Test
    void aRotatedSecretVerifiesBothWays() {
      // the sender signs with both during the rotation (two v1 entries) …
      String both = "t=" + T + ",v1=" + V1_CURRENT + ",v1=" + V1_PREVIOUS + ",v0=" + "0".repeat(64);
      assertThat(check(WebhookSignature.stripe(PREVIOUS), signed(both), PAYLOAD, NOW).isValid()).isTrue();
      // … and the receiver accepts either while it holds both
      assertThat(check(WebhookSignature.stripe(CURRENT, PREVIOUS), signed("t=" + T + ",v1=" + V1_PREVIOUS),
          PAYLOAD, NOW).isValid()).isTrue();
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + T + ",v1=" + V1_PREVIOUS), PAYLOAD, NOW)
          .failure()).isEqualTo(Failure.MISMATCH);
    }

    @Test
    void aStaleTimestampIsRefusedEvenWithAValidSignature() {
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + T + ",v1=" + V1_CURRENT), PAYLOAD,
          Instant.ofEpochSecond(T + 301)).failure()).isEqualTo(Failure.STALE);
      assertThat(check(WebhookSignature.stripe(java.time.Duration.ofMinutes(10), CURRENT),
          signed("t=" + T + ",v1=" + V1_CURRENT), PAYLOAD, Instant.ofEpochSecond(T + 301)).isValid()).isTrue();
    }

    @Test
    void theTimestampIsSigned() {
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + (T + 1) + ",v1=" + V1_CURRENT), PAYLOAD, NOW)
          .failure()).isEqualTo(Failure.MISMATCH);
    }

    @Test
    void onlyV0IsAnUnknownSchemeAndBrokenHeadersAreMalformed() {
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + T + ",v0=" + V1_CURRENT), PAYLOAD, NOW)
          .failure()).isEqualTo(Failure.UNKNOWN_SCHEME);
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("v1=" + V1_CURRENT), PAYLOAD, NOW).failure())
          .isEqualTo(Failure.MALFORMED);
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=soon,v1=" + V1_CURRENT), PAYLOAD, NOW).failure())
          .isEqualTo(Failure.MALFORMED);
      assertThat(check(WebhookSignature.stripe(CURRENT), signed("t=" + T + ",v1=abc"), PAYLOAD, NOW).failure())
          .isEqualTo(Failure.MALFORMED);
      assertThat(check(WebhookSignature.stripe(CURRENT), headers(), PAYLOAD, NOW).failure())
          .isEqualTo(Failure.MISSING);
    }

    @Test
    void theSignerProducesTheVector() {
      assertThat(io.idem.http.internal.StripeSignature.sign(CURRENT, T, PAYLOAD.getBytes(StandardCharsets.UTF_8)))
          .isEqualTo("t=" + T + ",v1=" + V1_CURRENT);
    }
  }

  @Test
  void schemesNeedASecret() {
    assertThatThrownBy(WebhookSignature::stripe).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("stripe needs at least one secret, but got none");
    assertThatThrownBy(() -> WebhookSignature.github(" ")).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("secrets[0] must not be blank");
  }
}
