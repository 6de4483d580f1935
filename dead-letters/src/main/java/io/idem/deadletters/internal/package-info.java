/** Implementation details of {@code idem-dead-letters}; not an API. */
@NullMarked
package io.idem.deadletters.internal;

import org.jspecify.annotations.NullMarked;
