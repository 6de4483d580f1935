package io.idem.cli;

import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * {@code --since} / {@code --until}: an instant in ISO-8601 ({@code 2026-12-01T10:00:00Z}), or a
 * duration before now as people write it ({@code 90m}, {@code 2h}, {@code 1d}, {@code 1h30m}).
 */
final class TimeArgument implements CommandLine.ITypeConverter<Instant> {
  private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");
  private static final Pattern SHORT = Pattern.compile("(?:\\d+(?:ms|s|m|h|d))+");

  @Override
  public Instant convert(String value) {
    String text = value.trim();
    String lower = text.toLowerCase(Locale.ROOT);
    if (SHORT.matcher(lower).matches()) {
      Duration ago = Duration.ZERO;
      Matcher m = PART.matcher(lower);
      while (m.find()) {
        long n = Long.parseLong(m.group(1));
        ago = ago.plus(switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        });
      }
      return Instant.now().minus(ago);
    }
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is neither an instant (2026-12-01T10:00:00Z)"
          + " nor a time ago (90m, 2h, 1d)");
    }
  }
}
