package io.idem.demo;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * The demo's stream of {@code OrderPaid} events: {@code events} deliveries to publish, of which a
 * share ({@code duplicateRate}) are producer retries re-sending an earlier order with the same
 * business id and the same payload, a little later in the stream.
 */
final class OrderEvents {

  /** One message to publish. */
  record Event(String orderId, byte[] payload, boolean retry) {}

  private final List<Event> events;
  private final Set<String> orderIds;

  private OrderEvents(List<Event> events, Set<String> orderIds) {
    this.events = events;
    this.orderIds = orderIds;
  }

  static OrderEvents generate(int events, double duplicateRate, long seed, String runId) {
    Random random = new Random(seed);
    int retries = (int) Math.round(events * duplicateRate);
    int unique = events - retries;
    List<Event> stream = new ArrayList<>(events);
    Set<String> ids = new LinkedHashSet<>();
    for (int i = 0; i < unique; i++) {
      String orderId = runId + "-order-" + i;
      long cents = 100 + random.nextInt(100_000);
      String json = "{\"type\":\"OrderPaid\",\"orderId\":\"" + orderId + "\",\"amountCents\":" + cents
          + ",\"currency\":\"EUR\"}";
      stream.add(new Event(orderId, json.getBytes(StandardCharsets.UTF_8), false));
      ids.add(orderId);
    }
    // A producer retry re-sends an order it already sent (same id, same bytes), shortly after.
    for (int r = 0; r < retries; r++) {
      int original = random.nextInt(unique);
      Event first = findFirst(stream, runId + "-order-" + original, original);
      int at = Math.min(stream.size(), stream.indexOf(first) + 1 + random.nextInt(50));
      stream.add(at, new Event(first.orderId(), first.payload(), true));
    }
    return new OrderEvents(stream, ids);
  }

  private static Event findFirst(List<Event> stream, String orderId, int hint) {
    // originals keep their relative order, so the original of order i sits at or after index i
    for (int i = Math.min(hint, stream.size() - 1); i < stream.size(); i++) {
      Event e = stream.get(i);
      if (!e.retry() && e.orderId().equals(orderId)) {
        return e;
      }
    }
    throw new IllegalStateException("original of " + orderId + " not found");
  }

  List<Event> events() {
    return events;
  }

  Set<String> orderIds() {
    return orderIds;
  }

  long retries() {
    return events.stream().filter(Event::retry).count();
  }
}
