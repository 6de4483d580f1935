/** A Spring Boot sample application on {@code idem-spring-boot-starter} (docs/SPRING-BOOT.md). */
@NullMarked
package io.idem.examples.spring;

import org.jspecify.annotations.NullMarked;
