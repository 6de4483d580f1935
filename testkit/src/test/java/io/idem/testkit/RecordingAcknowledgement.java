package io.idem.testkit;

import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Records how the pipeline settled a delivery; a unit-test stand-in for an adapter. */
class RecordingAcknowledgement implements Acknowledgement {
  final List<String> calls = new ArrayList<>();
  Duration retryDelay;
  DeadLetterReason reason;
  RuntimeException failAck;
  int failDeadLetter;

  @Override
  public void ack() {
    calls.add("ack");
    if (failAck != null) {
      throw failAck;
    }
  }

  @Override
  public void retry(Duration delay) {
    calls.add("retry");
    retryDelay = delay;
  }

  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    calls.add("retryWhenStoreAvailable");
    retryDelay = delay;
  }

  @Override
  public void release() {
    calls.add("release");
  }

  @Override
  public void deadLetter(DeadLetterReason reason) {
    calls.add("deadLetter");
    if (failDeadLetter > 0) {
      failDeadLetter--;
      throw new IllegalStateException("dead-letter destination refused the copy");
    }
    this.reason = reason;
  }
}
