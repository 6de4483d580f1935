package io.idem.demo;

import io.idem.cli.IdemCli;
import io.idem.deadletters.ActionResult;
import io.idem.deadletters.DeadLetterListener;
import io.idem.fixtures.MariaDbFixture;
import io.idem.fixtures.PostgresFixture;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import picocli.CommandLine;

/**
 * The dead-letter tool ({@code idem-cli dead-letters}) as the main job runs it, in this process, on
 * a demo broker's destination: which dead-letter destination each broker has and the options that
 * reach it and the run's store. Used by {@code --replay-dead-letters} and by the tests.
 */
public final class DeadLetterTool {

  /** What one command did: its exit status and how many dead letters had each outcome. */
  public record Result(int exit, Map<ActionResult.Outcome, Integer> outcomes, List<String> lines) {
    /** How many dead letters had {@code outcome}. */
    public int count(ActionResult.Outcome outcome) {
      return outcomes.getOrDefault(outcome, 0);
    }
  }

  private DeadLetterTool() {}

  /** The dead-letter destination of {@code destination} on {@code broker}, as its adapter fills it. */
  public static String deadLetterDestination(DemoBroker broker, String destination) {
    return switch (broker.name()) {
      case "kafka" -> destination + ".DLT";
      case "sqs" -> destination + "-dlq";
      default -> destination + ".dlq";
    };
  }

  /**
   * The options every command gets: the broker, its dead-letter destination (and on SQS the source
   * queue, which the demo's queue does not name in a RedrivePolicy), the connection, and the store
   * in {@code schema} with the actions table created when missing.
   */
  public static List<String> options(DemoBroker broker, String destination, String schema) {
    List<String> args = new ArrayList<>(List.of("--broker", broker.name(), "--destination",
        deadLetterDestination(broker, destination)));
    for (String a : broker.connectionArgs()) {
      args.add(a.replace("--kafka-bootstrap=", "--bootstrap-servers="));
    }
    if (broker.name().equals("sqs")) {
      args.add("--source=" + destination);
    }
    String user;
    String password;
    if (DemoDatabase.mariadb()) {
      MariaDbFixture mariadb = MariaDbFixture.shared();
      args.add("--jdbc-url=" + mariadb.jdbcUrl(schema));
      user = mariadb.user();
      password = mariadb.password();
    } else {
      PostgresFixture pg = PostgresFixture.shared();
      String url = pg.jdbcUrl();
      args.add("--jdbc-url=" + url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema);
      user = pg.user();
      password = pg.password();
    }
    args.add("--jdbc-user=" + user);
    if (!password.isEmpty()) {
      args.add("--jdbc-password=" + password);
    }
    args.add("--create-actions-table");
    return args;
  }

  /**
   * Runs {@code idem-cli dead-letters <command> <more> <options>} in this process; its output lines
   * go to {@code out}.
   */
  public static Result run(DemoBroker broker, String destination, String schema, String command, List<String> more,
      Consumer<String> out) {
    Map<ActionResult.Outcome, Integer> counts = new EnumMap<>(ActionResult.Outcome.class);
    IdemCli cli = new IdemCli(new DeadLetterListener() {
      @Override
      public void onResult(ActionResult result) {
        counts.merge(result.outcome(), 1, Integer::sum);
      }
    });
    List<String> args = new ArrayList<>(List.of("dead-letters", command));
    args.addAll(more);
    args.addAll(options(broker, destination, schema));
    StringWriter text = new StringWriter();
    CommandLine commandLine = IdemCli.commandLine(cli);
    commandLine.setOut(new PrintWriter(text, true));
    commandLine.setErr(new PrintWriter(text, true));
    int exit = commandLine.execute(args.toArray(String[]::new));
    List<String> lines = text.toString().lines().toList();
    lines.forEach(out);
    return new Result(exit, Map.copyOf(counts), lines);
  }
}
