package io.idem.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Options that need another broker (or database) are refused before anything connects, naming the
 * option and the broker.
 */
class SideBySideOptionsTest {

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', value = {
      "--broker rabbitmq --crash 3 | --crash runs on --broker kafka only so far, but --broker was rabbitmq",
      "--broker sqs --memory-events 1000 | --memory-events runs on --broker kafka only so far, but --broker was sqs",
      "--broker jms --commit-interval-ms 0 | --commit-interval-ms runs on --broker kafka only so far, but --broker was jms",
      "--broker jms --sqs-endpoint http://x | --sqs-endpoint is for --broker sqs, but --broker was jms",
      "--broker nats | --broker must be one of kafka, rabbitmq, sqs, jms, but was 'nats'",
      "--databases postgresql,oracle | --databases takes postgresql and/or mariadb, but got 'oracle'",
      "--mariadb-url jdbc:mariadb://x/ | --mariadb-url is for --databases with mariadb, but --databases was postgresql"})
  void isRefusedWithItsReason(String args, String message) {
    StringWriter err = new StringWriter();
    CommandLine command = new CommandLine(new SideBySide(new PrintStream(OutputStream.nullOutputStream())))
        .setErr(new PrintWriter(err));
    int exit = command.execute(args.trim().split(" "));

    assertThat(exit).isEqualTo(2);
    assertThat(err.toString()).contains(message);
  }
}
