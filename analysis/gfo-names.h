/* The report-base.h helpers under their old gfo_ names, for cli/cmd-growth.c
 * until it moves to analysis/growth.c: then rename there and drop this. */
#ifndef GMT_ANALYSIS_GFO_NAMES_H
#define GMT_ANALYSIS_GFO_NAMES_H

#include "analysis/report-base.h"

#define gfo_opts       rb_opts
#define gfo_open_all   rb_open_all
#define gfo_finish_all rb_finish_all
#define gfo_xfree      rb_xfree
#define gfo_time       rb_time
#define gfo_dur	       rb_dur
#define gfo_site       rb_site
#define gfo_human_head rb_human_head
#define gfo_json_head  rb_json_head
#define gfo_json_s     rb_json_s
#define gfo_json_d     rb_json_d
#define gfo_dev_total  rb_dev_total
#define gfo_utf8       rb_utf8

#endif
