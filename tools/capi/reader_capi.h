/* C interface to the offline profile reader and analyzer, for bindings
 * (python/deepcontext/_profile.py loads it with ctypes). The tree is the
 * one `deepcontext report` and `analyze` build (tools/analysis), so the
 * Python view and the CLI never disagree.
 *
 * Arrays returned stay valid until dc_reader_close. Strings are UTF-8 as
 * recorded (not validated). No function throws or aborts on bad input. One
 * reader is not for concurrent calls: metric columns are built on first use. */
#ifndef DEEPCONTEXT_TOOLS_CAPI_READER_CAPI_H_
#define DEEPCONTEXT_TOOLS_CAPI_READER_CAPI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DC_READER_API __attribute__((visibility("default")))

typedef struct dc_reader dc_reader;

/* Reads and merges count profile files. Never returns NULL (except out of
 * memory): check dc_reader_error, "" on success. */
DC_READER_API dc_reader* dc_reader_open(const char* const* paths, int32_t count);
DC_READER_API const char* dc_reader_error(const dc_reader* reader);
DC_READER_API void dc_reader_close(dc_reader* reader);

/* Nodes: index 0 is the root; parents precede children. */
DC_READER_API uint32_t dc_reader_node_count(const dc_reader* reader);
DC_READER_API const uint32_t* dc_reader_parents(const dc_reader* reader);
/* Per node: frame kind (format::FrameKind), string ids of name and file,
 * source line. */
DC_READER_API const uint8_t* dc_reader_kinds(const dc_reader* reader);
DC_READER_API const uint32_t* dc_reader_names(const dc_reader* reader);
DC_READER_API const uint32_t* dc_reader_files(const dc_reader* reader);
DC_READER_API const uint32_t* dc_reader_lines(const dc_reader* reader);

/* String table: string i is bytes [offsets[i], offsets[i+1]) of data. */
DC_READER_API uint32_t dc_reader_string_count(const dc_reader* reader);
DC_READER_API const char* dc_reader_string_data(const dc_reader* reader);
DC_READER_API const uint64_t* dc_reader_string_offsets(const dc_reader* reader);

/* Metrics, and per metric one value per node. */
DC_READER_API uint32_t dc_reader_metric_count(const dc_reader* reader);
DC_READER_API const char* dc_reader_metric_name(const dc_reader* reader, uint32_t metric);
DC_READER_API const char* dc_reader_metric_unit(const dc_reader* reader, uint32_t metric);
DC_READER_API const double* dc_reader_exclusive(const dc_reader* reader, uint32_t metric);
DC_READER_API const double* dc_reader_inclusive(const dc_reader* reader, uint32_t metric);
DC_READER_API const double* dc_reader_counts(const dc_reader* reader, uint32_t metric);

/* The input files and their metadata as JSON: [{"path", "metadata"}]. */
DC_READER_API const char* dc_reader_sources_json(dc_reader* reader);

/* Runs the built-in rules (only those in the comma-separated only_rules when
 * not empty), merges extra_findings_json (a JSON array of findings in the
 * analyzer's JSON shape; a finding whose context is empty gets the context of
 * its node) and renders them: format 0 = text, 1 = JSON; top 0 = all.
 * Returns NULL on error (see dc_reader_error). */
DC_READER_API const char* dc_reader_analyze(dc_reader* reader, const char* extra_findings_json,
                              const char* only_rules, int32_t format, uint32_t top);

/* Compares two profiles as `deepcontext diff --format json` does (schema
 * "deepcontext-diff"): contexts matched by their path of frames, ranked by
 * the change of metric (NULL or "" = the default metric). "before" and
 * "after" in it are the paths each reader was opened with, joined by ", ".
 * The text stays valid until the next call on before or its close. Returns
 * NULL on error (see dc_reader_error(before)). */
DC_READER_API const char* dc_reader_diff(dc_reader* before, const dc_reader* after,
                                         const char* metric);

#ifdef __cplusplus
}
#endif

#endif  // DEEPCONTEXT_TOOLS_CAPI_READER_CAPI_H_
