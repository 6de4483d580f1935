package io.idem;

import io.idem.internal.ChainedEnvelopeFormat;
import io.idem.internal.CloudEventsStructuredEnvelope;
import io.idem.internal.EventBridgeEnvelope;
import io.idem.internal.SnsEnvelope;
import io.idem.internal.UnwrappedMessage;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An envelope that a broker or platform puts around the producer's event (an SNS notification, a
 * CloudEvent in structured mode, an EventBridge event), recognized and opened once by the
 * pipeline before key extraction. Key extraction, the payload fingerprint and the handler all see
 * the unwrapped message; the broker is still acknowledged for the delivery itself, and a
 * dead-lettered copy is the delivery as it arrived. docs/KEYS.md has the table of shapes.
 *
 * <p>{@link #standard()} is on by default ({@link IdempotentConsumer.Builder#standardEnvelopes}):
 * those shapes are unambiguous. Others are one line: {@code .envelope(EnvelopeFormat.eventBridge())}.
 * Envelopes may nest (an SNS notification whose message is a CloudEvent): the pipeline opens them
 * until none is recognized, at most {@value #MAX_DEPTH} deep.
 *
 * <p>Custom formats implement this interface. Implementations must be thread-safe and should not
 * throw; the pipeline turns an exception or a {@code null} into a {@link Unwrapping.Rejected}
 * naming the format. The unwrapped message must keep the delivery's source, broker id, attempt,
 * attempt limit, received-at and {@link InboundMessage#unwrap(Class)}: {@link
 * #unwrapped(InboundMessage, Map, Set, byte[])} builds one that does.
 */
@FunctionalInterface
public interface EnvelopeFormat {

  /** Most envelopes opened inside one another for one message: {@value}. */
  int MAX_DEPTH = 4;

  /**
   * Recognizes and opens this format's envelope.
   *
   * @return never {@code null}
   */
  Unwrapping unwrap(InboundMessage message);

  /**
   * The formats the pipeline opens by default, in this order: {@link #snsNotification()}, then
   * {@link #cloudEventsStructured()}.
   */
  static EnvelopeFormat standard() {
    return firstOf(snsNotification(), cloudEventsStructured());
  }

  /**
   * An Amazon SNS notification delivered to SQS (or HTTP) without raw message delivery: a JSON
   * object with every field SNS puts in every notification, {@code "Type":"Notification"}, {@code
   * MessageId}, {@code TopicArn}, {@code Message} and {@code Timestamp} (present, not null); a JSON
   * body missing any of them is no envelope and passes through untouched. Never recognized in a
   * CloudEvent's {@code data}, which has a content type. Unwrapped to:
   *
   * <ul>
   *   <li>payload: the {@code Message} string as UTF-8, exactly what the producer published;
   *   <li>headers: the delivery's headers, then the producer's {@code MessageAttributes} (a
   *       {@code String}, {@code Number} or {@code String.Array} value as its text, a {@code
   *       Binary} value base64-decoded and read as strict UTF-8, undecodable otherwise), then
   *       {@code sns-message-id}, {@code sns-topic-arn}, {@code sns-timestamp} and, when present,
   *       {@code sns-subject}; a later one replaces an earlier one of the same name.
   * </ul>
   *
   * <p>{@code MessageId}, {@code Timestamp} and {@code Signature} are SNS's and new on every
   * publish, so they are neither the key nor fingerprinted. Rejected (only with all five fields
   * present): a blank {@code MessageId}, a {@code MessageId}, {@code Message} or {@code Timestamp}
   * that is not a string, attributes that are not {@code
   * {"Type":…,"Value":…}} objects, Binary values that are not base64, invalid JSON or a repeated
   * member name.
   */
  static EnvelopeFormat snsNotification() {
    return SnsEnvelope.INSTANCE;
  }

  /**
   * A CloudEvent in structured content mode, JSON event format: recognized by the content type
   * {@code application/cloudevents+json} (parameters such as {@code charset=utf-8} allowed, names
   * and values compared case-insensitively) in a {@code content-type} header (Kafka header, AMQP
   * {@code content-type} property, JMS property {@code content_type}), and where the message has
   * no content type at all (SQS, an SNS {@code Message}) by its shape: a JSON object with {@code
   * specversion} exactly {@code "1.0"} and string members {@code id}, {@code source} and {@code
   * type} that is a valid event; a by-shape candidate that is not (another specversion, an
   * object-valued attribute…) passes through unchanged. A CloudEvent's {@code data} is never
   * opened by shape (it is JSON by default): only {@code "datacontenttype":
   * "application/cloudevents+json"} nests one event in another. Unwrapped to what binary mode
   * delivers, so the default key is {@code source + " " + id} with the same checks:
   *
   * <ul>
   *   <li>headers: the delivery's headers without its content type ({@code content-type} and
   *       JMS's {@code content_type}), then each attribute (and extension) as {@code ce_<name>}
   *       (strings as they are, numbers and booleans as text), and {@code datacontenttype} as
   *       {@code content-type};
   *   <li>payload: {@code data_base64} decoded; else {@code data} — its text when it is a string
   *       and {@code datacontenttype} is not JSON, the JSON value otherwise (compact, numbers kept
   *       exact; a binary-mode retry of the same event is a duplicate only if its payload was
   *       compact JSON too); empty without either.
   * </ul>
   *
   * <p>Rejected, only under a CloudEvents content type: invalid JSON, not an object, a repeated
   * member, a missing or non-string {@code
   * specversion}, {@code id} or {@code source}, an attribute that is an object or array, both
   * {@code data} and {@code data_base64}, a charset other than UTF-8 (US-ASCII, its
   * subset, is accepted), another CloudEvents format
   * ({@code application/cloudevents+avro}…), and batch mode ({@code
   * application/cloudevents-batch+json}: several events in one delivery cannot share one
   * idempotency key and one acknowledgement; publish them one event per message).
   */
  static EnvelopeFormat cloudEventsStructured() {
    return CloudEventsStructuredEnvelope.INSTANCE;
  }

  /**
   * An Amazon EventBridge event delivered to SQS, Kafka or any target as a JSON object with
   * {@code detail-type}, {@code source} and {@code detail}. Not in {@link #standard()}: add it
   * with {@code .envelope(EnvelopeFormat.eventBridge())} and key on a business id inside {@code
   * detail}, e.g. {@code .keyExtractor(IdempotencyKeyExtractor.jsonPointer("/orderId"))}.
   * Unwrapped to:
   *
   * <ul>
   *   <li>payload: {@code detail} as compact JSON (numbers kept exact);
   *   <li>headers: the delivery's, then {@code eventbridge-id}, {@code eventbridge-detail-type},
   *       {@code eventbridge-source}, {@code eventbridge-time}, {@code eventbridge-account},
   *       {@code eventbridge-region} where present.
   * </ul>
   *
   * <p>EventBridge gives every {@code PutEvents} a new {@code id} (and {@code time}, unless the
   * producer sets it), so a re-put of the same event must not be keyed or fingerprinted by them.
   * Rejected: invalid JSON, a repeated member, {@code detail} missing or not an object.
   */
  static EnvelopeFormat eventBridge() {
    return EventBridgeEnvelope.INSTANCE;
  }

  /** Tries the formats in order: the first that unwraps or rejects decides. */
  static EnvelopeFormat firstOf(EnvelopeFormat... formats) {
    return new ChainedEnvelopeFormat(List.of(formats));
  }

  /** This format, then {@code next} when this one does not recognize the message. */
  default EnvelopeFormat orElse(EnvelopeFormat next) {
    return firstOf(this, next);
  }

  /**
   * An unwrapped message for a custom format: {@code headers}, {@code undecodableHeaders} and
   * {@code payload} as given (not copied: do not modify them afterwards), everything else —
   * source, broker id, attempt, attempt limit, received-at, {@link InboundMessage#unwrap(Class)}
   * (which also returns {@code delivery} itself for its own type) — the delivery's.
   */
  static InboundMessage unwrapped(InboundMessage delivery, Map<String, String> headers,
      Set<String> undecodableHeaders, byte[] payload) {
    return UnwrappedMessage.of(delivery, headers, undecodableHeaders, payload);
  }
}
