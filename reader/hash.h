/* uthash for the reading side: a failed allocation inside HASH_ADD goes
 * where every other one does (xalloc_failed: one line and exit 3 in the CLI,
 * an error returned by a library entry point), never uthash's own exit(-1).
 * The non-fatal mode first undoes the half-made add, so a handle whose call
 * jumped out still holds whole tables that its close can free.
 * Reading-side files include this, never <uthash.h> (make check-layers). */
#ifndef GMT_READER_HASH_H
#define GMT_READER_HASH_H

#include "reader/xalloc.h"

#define HASH_NONFATAL_OOM	 1
#define uthash_nonfatal_oom(obj) ((void)(obj), xalloc_failed())
#include <uthash.h>

#endif
