package io.idem.testkit;

import io.idem.spi.ForwardingProcessedEventStore;

/** Passes everything to an in-memory store; tests override one method to inject a failure. */
class DelegatingStore extends ForwardingProcessedEventStore<InMemoryTransaction> {
  DelegatingStore(InMemoryProcessedEventStore delegate) {
    super(delegate);
  }
}
