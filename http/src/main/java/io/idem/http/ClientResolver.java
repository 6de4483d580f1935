package io.idem.http;

import jakarta.servlet.http.HttpServletRequest;
import java.security.Principal;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Who sent a request, for scoping its idempotency key: the stored response of one client's key
 * is never answered to another client sending the same key (the key's stored value is the
 * client's id, escaped, a {@code :} and the key). Implementations are thread-safe.
 */
@FunctionalInterface
public interface ClientResolver {

  /**
   * The client's id (an authenticated principal, a tenant, an API key's id): any text without
   * NUL; {@code null} when the request has none, which the endpoint answers with 401 and nothing
   * applied.
   */
  @Nullable String clientOf(HttpServletRequest request);

  /** The default: the container's authenticated principal ({@link HttpServletRequest#getUserPrincipal()}). */
  static ClientResolver principal() {
    return new ClientResolver() {
      @Override
      public @Nullable String clientOf(HttpServletRequest request) {
        Principal principal = request.getUserPrincipal();
        return principal == null ? null : principal.getName();
      }

      @Override
      public String toString() {
        return "ClientResolver.principal()";
      }
    };
  }

  /**
   * The value of a header a trusted front (an API gateway that authenticated the caller) sets,
   * such as {@code X-Tenant-Id}. Never a header the client chooses freely: it would read other
   * clients' stored responses by sending their id.
   */
  static ClientResolver header(String name) {
    Objects.requireNonNull(name, "name");
    return new ClientResolver() {
      @Override
      public @Nullable String clientOf(HttpServletRequest request) {
        String value = request.getHeader(name);
        return value == null || value.isBlank() ? null : value.strip();
      }

      @Override
      public String toString() {
        return "ClientResolver.header(" + name + ")";
      }
    };
  }

  /**
   * One namespace for every caller: for an endpoint whose callers are one client (a single
   * backend) or that holds nothing private in its responses. Explicit, because it lets any caller
   * who knows a key read its response.
   */
  static ClientResolver shared() {
    return new ClientResolver() {
      @Override
      public String clientOf(HttpServletRequest request) {
        return "*";
      }

      @Override
      public String toString() {
        return "ClientResolver.shared()";
      }
    };
  }
}
