package io.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class MigrationRunTest {

  @Test
  void theFirstCrashFallsInTheCutoverTheNextInTheOtherPhases() {
    List<OrderEvents.Event> events = OrderEvents.generate(3_000, 0.0, 7, "r").events();
    List<List<OrderEvents.Event>> phases =
        List.of(events.subList(0, 1_000), events.subList(1_000, 2_000), events.subList(2_000, 3_000));
    Random random = new Random(3);
    for (int i = 0; i < 100; i++) {
      long[] one = MigrationRun.crashPlan(phases, 1, random);
      assertThat(one[0]).as("a single crash: in the cutover").isBetween(1_000L, 1_999L);

      long[] three = MigrationRun.crashPlan(phases, 3, random);
      assertThat(three[0]).as("first of three: old only").isBetween(0L, 999L);
      assertThat(three[1]).as("second of three: cutover").isBetween(1_000L, 1_999L);
      assertThat(three[2]).as("third of three: new only").isBetween(2_000L, 2_999L);
    }
  }
}
