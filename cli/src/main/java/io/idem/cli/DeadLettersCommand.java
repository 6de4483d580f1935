package io.idem.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code idem-cli dead-letters}: the dead-letter commands. */
@Command(
    name = "dead-letters",
    mixinStandardHelpOptions = true,
    description = "List, show, replay and discard the dead letters of one dead-letter destination.",
    subcommands = {ListCommand.class, ShowCommand.class, ReplayCommand.class, DiscardCommand.class})
final class DeadLettersCommand implements Runnable {

  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "a command is required: list, show, replay or discard");
  }
}
