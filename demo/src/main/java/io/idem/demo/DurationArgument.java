package io.idem.demo;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * {@code --timeout}: a duration as people write it ({@code 90s}, {@code 10m}, {@code 1h},
 * {@code 1h30m}, {@code 500ms}) or in ISO-8601 ({@code PT10M}).
 */
final class DurationArgument implements CommandLine.ITypeConverter<Duration> {
  private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");
  private static final Pattern SHORT = Pattern.compile("(?:\\d+(?:ms|s|m|h|d))+");

  @Override
  public Duration convert(String value) {
    return parse(value);
  }

  /**
   * The duration {@code value} stands for.
   *
   * @throws CommandLine.TypeConversionException when it is neither form, with an example
   */
  static Duration parse(String value) {
    String text = value.trim().toLowerCase(Locale.ROOT);
    if (SHORT.matcher(text).matches()) {
      Duration total = Duration.ZERO;
      Matcher m = PART.matcher(text);
      while (m.find()) {
        long n = Long.parseLong(m.group(1));
        total = total.plus(switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        });
      }
      return total;
    }
    if (text.startsWith("pt") || text.startsWith("p")) {
      try {
        return Duration.parse(text.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        // fall through to the message with examples
      }
    }
    throw new CommandLine.TypeConversionException(
        "'" + value + "' is not a duration: write it like 90s, 10m, 1h or 1h30m, or in ISO-8601 like PT10M");
  }

  /** {@code value} written the short way {@link #parse} reads back: {@code 10m}, {@code 1h30m}, {@code 500ms}. */
  static String format(Duration value) {
    if (value.isZero() || value.isNegative()) {
      return value.toString();
    }
    StringBuilder out = new StringBuilder();
    long[] amounts = {value.toDaysPart(), value.toHoursPart(), value.toMinutesPart(), value.toSecondsPart(),
        value.toMillisPart()};
    String[] units = {"d", "h", "m", "s", "ms"};
    for (int i = 0; i < amounts.length; i++) {
      if (amounts[i] > 0) {
        out.append(amounts[i]).append(units[i]);
      }
    }
    return out.length() > 0 ? out.toString() : value.toString();
  }
}
