/* gpumemtrace watch: one frame of the view, as lines (cli/watch-render.c),
 * shared by the terminal view and the plain snapshots (cli/cmd-watch.c). */
#ifndef GMT_CLI_WATCH_H
#define GMT_CLI_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/live.h"

/* What a frame shows beside the model's figures. */
struct watch_frame {
	const char *title;	  /* "python train.py (pid 4242)" */
	const char *path;	  /* the trace; NULL: none yet */
	const char *state;	  /* "running", "paused", "finished: exit status 0"... */
	const char *const *notes; /* the command's own warnings (stopped, damaged...) */
	size_t nnotes;
	enum live_group by;
	enum live_sort sort;
	bool one_device; /* only `device` (the `d` key, --device) */
	int64_t device;
	bool utf8; /* block characters and arrows, else ASCII */
	bool tui;  /* the terminal view: fit height, footer line */
	int width, height;
	size_t top;	     /* rows per device in a snapshot */
	uint64_t full_pct;   /* "nearly full" at this share of the device */
	const char *step_re; /* the step expression, for the hint */
	bool incomplete;     /* no trailer and it will not grow (or --once): PARTIAL DATA */
};

enum watch_style { WS_PLAIN, WS_TITLE, WS_HEAD, WS_WARN, WS_FOOT };
struct watch_line {
	char *text; /* UTF-8, no newline */
	int style;  /* enum watch_style */
};
struct watch_lines {
	struct watch_line *v;
	size_t n, cap;
};

/* The frame's lines (lv NULL: no trace yet). */
void watch_render(struct live *lv, const struct watch_frame *f, struct watch_lines *out);
void watch_lines_free(struct watch_lines *l);
/* The same figures as one JSON object on one line (--json). */
void watch_json(struct live *lv, const struct watch_frame *f, FILE *out);
/* s cut to at most cols code points, in place. */
void watch_cut(char *s, size_t cols);

#endif
