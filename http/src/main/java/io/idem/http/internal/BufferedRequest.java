package io.idem.http.internal;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.io.UnsupportedEncodingException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * The request with its body already read (Idem reads it first, to verify a signature and compute
 * the fingerprint): {@link #getInputStream()} and {@link #getReader()} serve those bytes again, a
 * fresh stream per call, so a handler run again after a transaction retry reads the same body.
 * Form parameters are not parsed from it (the container's own parsing found the body consumed):
 * read form bodies from the stream. Confined to the request's thread.
 */
public final class BufferedRequest extends HttpServletRequestWrapper {
  private final byte[] body;

  public BufferedRequest(HttpServletRequest request, byte[] body) {
    super(request);
    this.body = body;
  }

  /** The body bytes; shared, not copied. */
  public byte[] body() {
    return body;
  }

  @Override
  public ServletInputStream getInputStream() {
    ByteArrayInputStream in = new ByteArrayInputStream(body);
    return new ServletInputStream() {
      @Override
      public boolean isFinished() {
        return in.available() == 0;
      }

      @Override
      public boolean isReady() {
        return true;
      }

      @Override
      public void setReadListener(ReadListener listener) {
        throw new UnsupportedOperationException("the body was already read by Idem");
      }

      @Override
      public int read() {
        return in.read();
      }

      @Override
      public int read(byte[] b, int off, int len) {
        return in.read(b, off, len);
      }
    };
  }

  @Override
  public BufferedReader getReader() throws UnsupportedEncodingException {
    String encoding = getCharacterEncoding();
    Charset charset;
    try {
      charset = encoding == null ? StandardCharsets.ISO_8859_1 : Charset.forName(encoding);
    } catch (RuntimeException e) {
      throw new UnsupportedEncodingException(encoding);
    }
    return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset));
  }

  @Override
  public int getContentLength() {
    return body.length;
  }

  @Override
  public long getContentLengthLong() {
    return body.length;
  }
}
