package io.idem;

import java.util.Objects;

/**
 * What an {@link EnvelopeFormat} made of one message: the event inside its envelope, "not this
 * format", or a reason the message claims to be this envelope but cannot be opened. A value, not
 * an exception, so that the formats can be tried in order, as {@link KeyExtraction} is.
 */
public sealed interface Unwrapping {

  /**
   * The message was this format's envelope.
   *
   * @param message the event inside: its payload and headers as {@link EnvelopeFormat} documents
   *     for the format; {@link InboundMessage#source()}, {@link InboundMessage#brokerMessageId()},
   *     the attempt, the limit and {@link InboundMessage#unwrap(Class)} those of the delivery
   * @param format the format's name, for logs, such as {@code SNS notification}
   */
  record Unwrapped(InboundMessage message, String format) implements Unwrapping {
    public Unwrapped {
      Objects.requireNonNull(message, "message");
      Objects.requireNonNull(format, "format");
    }
  }

  /** The message is not this format's envelope; the next format is tried. */
  record NotRecognized() implements Unwrapping {}

  /**
   * The message claims to be this format's envelope (its defining fields or its content type say
   * so) but cannot be opened: the message is dead-lettered ({@link DeadLetterCause#INVALID_KEY})
   * with this reason, never processed without its key and never dropped.
   */
  record Rejected(String reason) implements Unwrapping {
    public Rejected {
      Objects.requireNonNull(reason, "reason");
    }
  }

  static Unwrapping unwrapped(InboundMessage message, String format) {
    return new Unwrapped(message, format);
  }

  static Unwrapping notRecognized() {
    return new NotRecognized();
  }

  static Unwrapping rejected(String reason) {
    return new Rejected(reason);
  }
}
