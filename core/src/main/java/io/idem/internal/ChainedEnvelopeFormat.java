package io.idem.internal;

import io.idem.EnvelopeFormat;
import io.idem.InboundMessage;
import io.idem.Unwrapping;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Tries formats in order; the first that unwraps or rejects decides. Also opens nested envelopes
 * for the pipeline ({@link #open}).
 */
public final class ChainedEnvelopeFormat implements EnvelopeFormat {
  private final List<EnvelopeFormat> formats;

  public ChainedEnvelopeFormat(List<EnvelopeFormat> formats) {
    List<EnvelopeFormat> flat = new ArrayList<>();
    for (EnvelopeFormat format : formats) {
      if (format instanceof ChainedEnvelopeFormat chain) {
        flat.addAll(chain.formats);
      } else {
        flat.add(Objects.requireNonNull(format, "format"));
      }
    }
    this.formats = List.copyOf(flat);
  }

  @Override
  public Unwrapping unwrap(InboundMessage message) {
    for (EnvelopeFormat format : formats) {
      Unwrapping result = unwrapSafely(format, message);
      if (!(result instanceof Unwrapping.NotRecognized)) {
        return result;
      }
    }
    return Unwrapping.notRecognized();
  }

  /**
   * Opens envelopes inside one another until none is recognized, at most {@link
   * EnvelopeFormat#MAX_DEPTH} deep: the message itself when it is no envelope, the innermost
   * event, or the rejection.
   */
  static Unwrapping open(EnvelopeFormat format, InboundMessage message) {
    InboundMessage current = message;
    List<String> opened = new ArrayList<>();
    for (int depth = 0; depth <= EnvelopeFormat.MAX_DEPTH; depth++) {
      Unwrapping result = unwrapSafely(format, current);
      if (result instanceof Unwrapping.NotRecognized) {
        return opened.isEmpty() ? result : Unwrapping.unwrapped(current, String.join(" in ", opened));
      }
      if (result instanceof Unwrapping.Rejected rejected) {
        return opened.isEmpty() ? rejected
            : Unwrapping.rejected(rejected.reason() + " (inside " + String.join(" inside ", opened) + ")");
      }
      Unwrapping.Unwrapped unwrapped = (Unwrapping.Unwrapped) result;
      opened.add(0, unwrapped.format()); // innermost first
      current = unwrapped.message();
    }
    return Unwrapping.rejected("more than " + EnvelopeFormat.MAX_DEPTH + " envelopes inside one"
        + " another (" + String.join(" in ", opened) + ")");
  }

  private static Unwrapping unwrapSafely(EnvelopeFormat format, InboundMessage message) {
    Unwrapping result;
    try {
      result = format.unwrap(message);
    } catch (RuntimeException e) {
      return Unwrapping.rejected("envelope format " + format + " failed: " + e);
    }
    return result == null ? Unwrapping.rejected("envelope format " + format + " returned null") : result;
  }

  @Override
  public String toString() {
    return "firstOf" + formats;
  }
}
