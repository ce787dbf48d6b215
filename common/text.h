/* Sizes, times, JSON and XML text as the reports print them. */
#ifndef GMT_COMMON_TEXT_H
#define GMT_COMMON_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* "1.5 GiB", "512 B". buf >= 32 bytes. */
const char *fmt_size(char *buf, uint64_t bytes);
/* "+1.234567890" seconds relative to the trace start. buf >= 32. */
const char *fmt_reltime(char *buf, int64_t ns);

/* JSON string with quotes; invalid UTF-8 becomes U+FFFD. */
void json_str(FILE *f, const char *s, size_t len);
#define json_cstr(f, s) json_str((f), (s), strlen(s))
/* The same as a function: s is evaluated once. */
void json_cstr0(FILE *f, const char *s);
/* XML text (JUnit, SVG): escaped, control characters and invalid UTF-8 as '?'. */
void xml_text(FILE *f, const char *s);

const char *path_basename(const char *path);

#endif
