package io.idem.store.jdbc;

import io.idem.DeadLetterReason;
import io.idem.spi.Acknowledgement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Records what the pipeline told the broker: {@code ack}, {@code retry}, … in call order. */
class RecordedAcknowledgement implements Acknowledgement {
  final List<String> calls = new ArrayList<>();

  @Override
  public void ack() {
    calls.add("ack");
  }

  @Override
  public void retry(Duration delay) {
    calls.add("retry");
  }

  @Override
  public void retryWhenStoreAvailable(Duration delay) {
    calls.add("retryWhenStoreAvailable");
  }

  @Override
  public void deadLetter(DeadLetterReason reason) {
    calls.add("deadLetter:" + reason.cause());
  }
}
