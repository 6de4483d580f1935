/** Implementation details; not API, may change in any release. */
@NullMarked
package io.idem.internal;

import org.jspecify.annotations.NullMarked;
