package io.idem.sqs;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** Bounded, thread-safe sets of recent {@code MessageId}s: the eldest entry goes first when full. */
final class RecentIds {
  /** How many ids a set keeps: {@value}. */
  static final int CAPACITY = 10_000;

  private RecentIds() {}

  /** A synchronized set keeping the last {@link #CAPACITY} ids added. */
  static Set<String> set() {
    return Collections.newSetFromMap(Collections.synchronizedMap(
        new LinkedHashMap<>(16, 0.75f, false) {
          private static final long serialVersionUID = 1L;

          @Override
          protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > CAPACITY;
          }
        }));
  }
}
