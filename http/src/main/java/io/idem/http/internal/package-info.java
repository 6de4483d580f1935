/** Implementation of {@code idem-http}; not an API, may change without notice. */
@NullMarked
package io.idem.http.internal;

import org.jspecify.annotations.NullMarked;
