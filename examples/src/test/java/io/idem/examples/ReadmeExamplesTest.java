package io.idem.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The README's SQS quick start (with its local endpoint), outbox, natural-idempotency and retention snippets are the compiled code between
 * {@code // README: begin} and {@code // README: end} in these example files, as written: a change
 * to either that is not made to the other fails here.
 */
class ReadmeExamplesTest {
  private static final Path SOURCES = Path.of("src/main/java/io/idem/examples");
  private static final Path README = Path.of("../README.md");

  @ParameterizedTest
  @ValueSource(strings = {"Receipts.java", "OrderStates.java", "Retention.java", "SqsQuickStart.java"})
  void theReadmeShowsTheCompiledExampleAsWritten(String file) throws IOException {
    List<String> lines = Files.readAllLines(SOURCES.resolve(file));
    int begin = indexOf(lines, "// README: begin", file);
    int end = indexOf(lines, "// README: end", file);
    List<String> snippet = lines.subList(begin + 1, end);
    int indent = snippet.stream().filter(l -> !l.isBlank())
        .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
    String expected = snippet.stream().map(l -> l.isBlank() ? "" : l.substring(indent))
        .collect(Collectors.joining("\n", "```java\n", "\n```"));

    assertThat(snippet).as("the snippet of %s: at most 12 lines", file).hasSizeBetween(1, 12);
    assertThat(Files.readString(README)).as("README.md shows %s", file).contains(expected);
  }

  private static int indexOf(List<String> lines, String marker, String file) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).trim().equals(marker)) {
        return i;
      }
    }
    throw new AssertionError(file + " has no line '" + marker + "'");
  }
}
