package io.idem.internal;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** An outage stays visible: WARN at doubling intervals, ERROR past the threshold, INFO when over. */
class OutageTrackerTest {
  private final MutableClock clock = new MutableClock();
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
  private Logger log;

  @BeforeEach
  void captureLog() {
    log = new LoggerContext().getLogger("outage-test");
    log.setLevel(Level.DEBUG);
    logged.start();
    log.addAppender(logged);
  }

  @Test
  void warnsAtDoublingIntervalsThenErrorsPastTheThresholdAndSaysWhenItIsOver() {
    OutageTracker tracker = new OutageTracker(log, Duration.ofSeconds(60), clock);
    // one failed transaction per second for 100 s
    for (int second = 0; second < 100; second++) {
      tracker.failed("retry", "Connection refused");
      clock.advance(Duration.ofSeconds(1));
    }
    List<ILoggingEvent> reports = logged.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN)).toList();
    // at 0 s, then 5 s, 15 s (5+10), 35 s (+20), 75 s (+40): five reports for 100 failures
    assertThat(reports).extracting(ILoggingEvent::getLevel)
        .containsExactly(Level.WARN, Level.WARN, Level.WARN, Level.WARN, Level.ERROR);
    assertThat(reports.get(4).getFormattedMessage()).contains("76 consecutive").contains("past the 60 s threshold");
    assertThat(tracker.health().consecutiveFailures()).isEqualTo(100);

    tracker.reached();
    assertThat(logged.list.get(logged.list.size() - 1).getFormattedMessage())
        .contains("store available again after 100 failed transaction(s) over 100 s");
    assertThat(tracker.health().isAvailable()).isTrue();
    assertThat(tracker.health().lastSuccess()).isEqualTo(clock.instant());

    // a new outage starts over with a WARN at once
    tracker.failed("retry", "Connection refused");
    assertThat(logged.list.get(logged.list.size() - 1).getLevel()).isEqualTo(Level.WARN);
  }

  @Test
  void repeatsAreCappedAtTenMinutes() {
    OutageTracker tracker = new OutageTracker(log, Duration.ofHours(10), clock);
    for (int minute = 0; minute < 120; minute++) {
      tracker.failed("retry", "down");
      clock.advance(Duration.ofMinutes(1));
    }
    long warns = logged.list.stream().filter(e -> e.getLevel() == Level.WARN).count();
    // 0 s, 5 s (1 min tick), … the doubling reaches 10 min after ~7 reports, then one per 10 min
    assertThat(warns).isBetween(15L, 20L);
  }

  private static final class MutableClock extends Clock {
    private Instant now = Instant.parse("2026-12-01T00:00:00Z");

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
