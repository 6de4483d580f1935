package io.idem.http.internal;

import io.idem.http.spi.StoredResponse;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The response a handler writes inside the claiming transaction, held entirely in memory and
 * never sent: status, headers, cookies, content type and body bytes (at most {@code maxBodyBytes};
 * one byte more fails the handler's write with {@link ResponseTooLargeException}). Nothing reaches
 * the client until {@link #writeTo} after the commit; {@link #isCommitted()} is always false, and
 * {@link #flushBuffer()} only flushes the writer into the buffer. {@code sendError} becomes a
 * problem-details body of that status, {@code sendRedirect} a status and a {@code Location}
 * header, so that what is stored is exactly what is answered. Confined to the request's thread.
 */
public final class CapturingResponse extends HttpServletResponseWrapper {
  private final int maxBodyBytes;
  private int status = SC_OK;
  private final List<String[]> headers = new ArrayList<>();
  private final List<Cookie> cookies = new ArrayList<>();
  private @Nullable String contentType;
  private @Nullable String characterEncoding;
  private final Capped body;
  private @Nullable PrintWriter writer;
  private @Nullable ServletOutputStream stream;

  public CapturingResponse(HttpServletResponse response, int maxBodyBytes) {
    super(response);
    this.maxBodyBytes = maxBodyBytes;
    this.body = new Capped(maxBodyBytes);
  }

  /** A handler's write went past the limit of bytes kept for the response. */
  public static final class ResponseTooLargeException extends IOException {
    private static final long serialVersionUID = 1L;

    public ResponseTooLargeException(int max) {
      super(message(max));
    }

    /** The exception's message for a limit of {@code max} bytes. */
    public static String message(int max) {
      return "the response body is larger than the " + max + " bytes kept for it"
          + " (maxResponseBytes); nothing was applied";
    }
  }

  /** Forgets everything written so far (a new run of the handler). */
  public void clear() {
    status = SC_OK;
    headers.clear();
    cookies.clear();
    contentType = null;
    characterEncoding = null;
    body.reset();
    writer = null;
    stream = null;
  }

  @Override
  public int getStatus() {
    return status;
  }

  @Override
  public void setStatus(int sc) {
    this.status = sc;
  }

  @Override
  public void sendError(int sc, @Nullable String msg) throws IOException {
    clear();
    status = sc;
    contentType = Problems.MEDIA_TYPE;
    String detail = msg == null ? "" : msg;
    String json = "{\"status\":" + sc + ",\"detail\":" + quote(detail) + "}";
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    body.add(bytes, 0, bytes.length);
  }

  @Override
  public void sendError(int sc) throws IOException {
    sendError(sc, null);
  }

  @Override
  public void sendRedirect(String location) {
    sendRedirect(location, SC_FOUND, true);
  }

  @Override
  public void sendRedirect(String location, boolean clearBuffer) {
    sendRedirect(location, SC_FOUND, clearBuffer);
  }

  @Override
  public void sendRedirect(String location, int sc) {
    sendRedirect(location, sc, true);
  }

  @Override
  public void sendRedirect(String location, int sc, boolean clearBuffer) {
    if (clearBuffer) {
      body.reset();
    }
    status = sc;
    setHeader("Location", location);
  }

  @Override
  public void addCookie(Cookie cookie) {
    cookies.add(cookie);
  }

  @Override
  public boolean containsHeader(String name) {
    return getHeader(name) != null;
  }

  @Override
  public void setHeader(String name, @Nullable String value) {
    if (special(name, value)) {
      return;
    }
    headers.removeIf(h -> h[0].equalsIgnoreCase(name));
    if (value != null) {
      headers.add(new String[] {name, value});
    }
  }

  @Override
  public void addHeader(String name, @Nullable String value) {
    if (special(name, value) || value == null) {
      return;
    }
    headers.add(new String[] {name, value});
  }

  /** Content-Type goes to its own field; Content-Length is computed when written out. */
  private boolean special(String name, @Nullable String value) {
    if (name.equalsIgnoreCase("Content-Type")) {
      setContentType(value);
      return true;
    }
    return name.equalsIgnoreCase("Content-Length");
  }

  @Override
  public void setIntHeader(String name, int value) {
    setHeader(name, Integer.toString(value));
  }

  @Override
  public void addIntHeader(String name, int value) {
    addHeader(name, Integer.toString(value));
  }

  @Override
  public void setDateHeader(String name, long date) {
    setHeader(name, HttpDates.format(date));
  }

  @Override
  public void addDateHeader(String name, long date) {
    addHeader(name, HttpDates.format(date));
  }

  @Override
  public @Nullable String getHeader(String name) {
    if (name.equalsIgnoreCase("Content-Type")) {
      return getContentType();
    }
    for (String[] h : headers) {
      if (h[0].equalsIgnoreCase(name)) {
        return h[1];
      }
    }
    return null;
  }

  @Override
  public Collection<String> getHeaders(String name) {
    List<String> values = new ArrayList<>();
    if (name.equalsIgnoreCase("Content-Type")) {
      String type = getContentType();
      if (type != null) {
        values.add(type);
      }
      return values;
    }
    for (String[] h : headers) {
      if (h[0].equalsIgnoreCase(name)) {
        values.add(h[1]);
      }
    }
    return values;
  }

  @Override
  public Collection<String> getHeaderNames() {
    Set<String> names = new LinkedHashSet<>();
    for (String[] h : headers) {
      names.add(h[0]);
    }
    if (getContentType() != null) {
      names.add("Content-Type");
    }
    return names;
  }

  @Override
  public @Nullable String getContentType() {
    if (contentType == null) {
      return null;
    }
    if (characterEncoding != null && !contentType.toLowerCase(Locale.ROOT).contains("charset=")) {
      return contentType + ";charset=" + characterEncoding;
    }
    return contentType;
  }

  @Override
  public void setContentType(@Nullable String type) {
    if (type == null) {
      contentType = null;
      return;
    }
    int at = type.toLowerCase(Locale.ROOT).indexOf("charset=");
    if (at >= 0) {
      String charset = type.substring(at + "charset=".length()).split(";", 2)[0].trim();
      if (charset.length() > 1 && charset.startsWith("\"") && charset.endsWith("\"")) {
        charset = charset.substring(1, charset.length() - 1);
      }
      if (writer == null) {
        characterEncoding = charset;
      }
    }
    contentType = type;
  }

  @Override
  public String getCharacterEncoding() {
    return characterEncoding != null ? characterEncoding : StandardCharsets.ISO_8859_1.name();
  }

  @Override
  public void setCharacterEncoding(@Nullable String charset) {
    if (writer == null) {
      characterEncoding = charset;
    }
  }

  @Override
  public void setCharacterEncoding(@Nullable Charset charset) {
    setCharacterEncoding(charset == null ? null : charset.name());
  }

  @Override
  public void setContentLength(int len) {}

  @Override
  public void setContentLengthLong(long len) {}

  @Override
  public void setLocale(Locale loc) {}

  @Override
  public void setBufferSize(int size) {}

  @Override
  public int getBufferSize() {
    return maxBodyBytes;
  }

  @Override
  public void flushBuffer() {
    if (writer != null) {
      writer.flush();
    }
  }

  @Override
  public void resetBuffer() {
    body.reset();
  }

  @Override
  public boolean isCommitted() {
    return false;
  }

  @Override
  public void reset() {
    clear();
  }

  @Override
  public void setTrailerFields(java.util.function.Supplier<java.util.Map<String, String>> supplier) {}

  @Override
  public ServletOutputStream getOutputStream() {
    if (writer != null) {
      throw new IllegalStateException("getWriter() was already called for this response");
    }
    if (stream == null) {
      stream = new ServletOutputStream() {
        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setWriteListener(WriteListener listener) {
          throw new UnsupportedOperationException("non-blocking writes are not supported inside an"
              + " idempotent request's transaction");
        }

        @Override
        public void write(int b) throws IOException {
          body.add(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          body.add(b, off, len);
        }
      };
    }
    return stream;
  }

  @Override
  public PrintWriter getWriter() {
    if (stream != null) {
      throw new IllegalStateException("getOutputStream() was already called for this response");
    }
    if (writer == null) {
      Charset charset = Charset.forName(getCharacterEncoding());
      writer = new PrintWriter(new OutputStreamWriter(new java.io.OutputStream() {
        @Override
        public void write(int b) throws IOException {
          body.add(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          body.add(b, off, len);
        }
      }, charset));
    }
    return writer;
  }

  /** The body bytes written so far (the writer flushed first). */
  public byte[] body() throws IOException {
    if (writer != null) {
      writer.flush();
      if (writer.checkError()) {
        throw new ResponseTooLargeException(maxBodyBytes);
      }
    }
    body.check();
    return body.toByteArray();
  }

  /** Whether a write was refused because the body went past the limit. */
  public boolean overflowed() {
    return body.overflowed;
  }

  /** The response to store: status, the headers named in {@code kept} (any case), body. */
  public StoredResponse toStored(Set<String> kept) throws IOException {
    List<StoredResponse.Header> chosen = new ArrayList<>();
    String type = getContentType();
    if (type != null && kept.contains("content-type")) {
      chosen.add(new StoredResponse.Header("Content-Type", type));
    }
    for (String[] h : headers) {
      if (kept.contains(h[0].toLowerCase(Locale.ROOT))) {
        chosen.add(new StoredResponse.Header(h[0], h[1]));
      }
    }
    return new StoredResponse(status, chosen, body());
  }

  /** Sends everything the handler wrote to {@code real}: the first answer, after the commit. */
  public void writeTo(HttpServletResponse real) throws IOException {
    byte[] bytes = body();
    real.setStatus(status);
    for (String[] h : headers) {
      real.addHeader(h[0], h[1]);
    }
    for (Cookie cookie : cookies) {
      real.addCookie(cookie);
    }
    String type = getContentType();
    if (type != null) {
      real.setContentType(type);
    }
    real.setContentLength(bytes.length);
    real.getOutputStream().write(bytes);
  }

  /** Sends a stored response to {@code real}, byte for byte, with {@code extra} headers added. */
  public static void replay(StoredResponse stored, HttpServletResponse real, String... extra)
      throws IOException {
    real.setStatus(stored.status());
    for (StoredResponse.Header h : stored.headers()) {
      if (h.name().equalsIgnoreCase("Content-Type")) {
        real.setContentType(h.value());
      } else {
        real.addHeader(h.name(), h.value());
      }
    }
    for (int i = 0; i + 1 < extra.length; i += 2) {
      real.setHeader(extra[i], extra[i + 1]);
    }
    real.setContentLength(stored.body().length);
    real.getOutputStream().write(stored.body());
  }

  private static String quote(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20) {
            out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }

  /** A byte buffer that refuses to grow past its limit. */
  private static final class Capped extends ByteArrayOutputStream {
    private final int max;
    boolean overflowed;

    Capped(int max) {
      super(Math.min(max, 1024));
      this.max = max;
    }

    void add(byte[] b, int off, int len) throws ResponseTooLargeException {
      if (count + len > max) {
        overflowed = true;
        throw new ResponseTooLargeException(max);
      }
      write(b, off, len);
    }

    void check() throws ResponseTooLargeException {
      if (overflowed) {
        throw new ResponseTooLargeException(max);
      }
    }

    @Override
    public synchronized void reset() {
      super.reset();
      overflowed = false;
    }
  }
}
