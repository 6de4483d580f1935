package io.idem.sqs;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which receives the ledger flags as unaccounted redeliveries, and the attempts it gives them. */
class AttemptLedgerTest {
  private final AttemptLedger ledger = new AttemptLedger();

  @Test
  void aFirstReceiveIsNeverFlagged() {
    assertThat(ledger.receive("m", 1)).isEqualTo(new AttemptLedger.Attempt(1, false));
  }

  @Test
  void aRedeliveryNeverSeenHereIsFlagged() {
    // another process received it, or this one before a restart: it may have died in the handler
    assertThat(ledger.receive("m", 2)).isEqualTo(new AttemptLedger.Attempt(2, true));
  }

  @Test
  void aRedeliveryWhoseHandlerStartedAndNeverEndedIsFlagged() {
    ledger.receive("m", 1);
    ledger.started("m"); // then an Error stopped the consumer: no end recorded
    assertThat(ledger.receive("m", 2)).isEqualTo(new AttemptLedger.Attempt(2, true));
  }

  @Test
  void aRedeliveryAfterAnOwnRetryIsNotFlagged() {
    ledger.receive("m", 1);
    ledger.started("m");
    ledger.ended("m"); // the handler failed; the consumer sent it back with ChangeMessageVisibility
    assertThat(ledger.receive("m", 2)).isEqualTo(new AttemptLedger.Attempt(2, false));
  }

  @Test
  void aRedeliveryAfterAHandBackIsNotFlaggedNorCounted() {
    ledger.receive("m", 1);
    ledger.notRun("m"); // the rest of a FIFO group, handed back unstarted
    assertThat(ledger.receive("m", 2)).isEqualTo(new AttemptLedger.Attempt(1, false));
    ledger.started("m");
    ledger.notRun("m"); // a handler interrupted at close
    assertThat(ledger.receive("m", 3)).isEqualTo(new AttemptLedger.Attempt(1, false));
  }

  @Test
  void inProcessRetriesCountAsAttemptsWithoutAFlag() {
    ledger.receive("m", 1);
    ledger.started("m");
    ledger.ended("m");
    ledger.ranAgain("m"); // a FIFO head retried ahead of its group
    ledger.started("m");
    ledger.ended("m");
    assertThat(ledger.receive("m", 2)).isEqualTo(new AttemptLedger.Attempt(3, false));
  }

  @Test
  void aFlaggedMessageStaysFlaggedSoTheStoreGoesOnCounting() {
    assertThat(ledger.receive("m", 3).unaccounted()).isTrue();
    ledger.started("m");
    ledger.ended("m"); // its handler failed in this process: retried
    assertThat(ledger.receive("m", 4).unaccounted()).isTrue();
  }

  @Test
  void forgetsTheLeastRecentlyUsedBeyondItsCapacity() {
    AttemptLedger small = new AttemptLedger(2);
    small.receive("a", 1);
    small.notRun("a");
    small.receive("b", 1);
    small.receive("c", 1);
    assertThat(small.size()).isEqualTo(2);
    // "a" is forgotten: its hand-back no longer known, so its redelivery counts and is flagged
    assertThat(small.receive("a", 2)).isEqualTo(new AttemptLedger.Attempt(2, true));
  }
}
