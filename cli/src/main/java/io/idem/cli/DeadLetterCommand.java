package io.idem.cli;

import io.idem.deadletters.DeadLetterOperations;
import io.idem.deadletters.spi.DeadLetterDestination;
import io.idem.store.jdbc.DeadLetterActions;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** What every {@code dead-letters} command shares: the connection options and the output. */
abstract class DeadLetterCommand implements Callable<Integer> {

  @Mixin ConnectionOptions connection;

  @Spec CommandSpec spec;

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  PrintWriter err() {
    return spec.commandLine().getErr();
  }

  IdemCli root() {
    return (IdemCli) spec.root().userObject();
  }

  @Override
  public final Integer call() {
    if (connection.maxScan < 1 || connection.maxScan > 1_000_000) {
      throw new CliFailure(IdemCli.EXIT_USAGE, "--max-scan must be in [1, 1000000], but was " + connection.maxScan);
    }
    boolean json = connection.json();
    try {
      return run(json);
    } finally {
      connection.closeClients();
      out().flush();
    }
  }

  abstract int run(boolean json);

  /**
   * The record of actions when a store was given and its table is there, for reading (Kafka's
   * settled dead letters, a dead letter's history); {@code null} otherwise.
   */
  @Nullable DeadLetterActions optionalActions() {
    if (!connection.hasStore()) {
      return null;
    }
    try {
      return connection.actions(connection.dataSource("reading the record"));
    } catch (IllegalStateException e) {
      return null; // no record yet: nothing was replayed or discarded with the tool
    }
  }

  DeadLetterOperations.Builder operations(DeadLetterDestination destination) {
    return DeadLetterOperations.builder(destination).maxScan(connection.maxScan).listener(root().listener());
  }

  DataSource store(String needs) {
    return connection.dataSource(needs);
  }
}
