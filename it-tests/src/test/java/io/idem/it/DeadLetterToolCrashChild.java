package io.idem.it;

import io.idem.cli.IdemCli;
import io.idem.deadletters.DeadLetter;
import io.idem.deadletters.DeadLetterListener;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The dead-letter tool in a child JVM that {@code DeadLetterToolIT} kills with SIGKILL mid-replay:
 * the real {@code idem-cli} command, with a listener that, once the {@code n}-th republished copy
 * is stored by the broker (and before that dead letter is removed), prints
 * {@value #REPUBLISHED} and the dead letter's id and then waits for the kill.
 *
 * <p>Arguments: {@code n}, then the command line of {@code idem-cli}.
 */
public final class DeadLetterToolCrashChild {
  /** Printed once the {@code n}-th copy is stored and before its dead letter is removed: {@value}. */
  static final String REPUBLISHED = "IDEM-REPUBLISHED ";

  private DeadLetterToolCrashChild() {}

  public static void main(String[] args) throws InterruptedException {
    int haltAfter = Integer.parseInt(args[0]);
    AtomicInteger republished = new AtomicInteger();
    IdemCli cli = new IdemCli(new DeadLetterListener() {
      @Override
      public void onRepublished(DeadLetter deadLetter, String target) {
        if (republished.incrementAndGet() == haltAfter) {
          System.out.println(REPUBLISHED + deadLetter.id());
          System.out.flush();
          try {
            Thread.sleep(Long.MAX_VALUE); // the parent SIGKILLs the tool here
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    });
    System.exit(IdemCli.commandLine(cli).execute(Arrays.copyOfRange(args, 1, args.length)));
  }
}
