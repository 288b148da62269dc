#include "tools/server/profile_store.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <utility>

#include "format/dctx_file.h"
#include "tools/analyzer/analyzer.h"
#include "tools/analyzer/findings_json.h"
#include "tools/export/view_data.h"
#include "tools/export/view_data_binary.h"
#include "tools/sass/profile_sass.h"

namespace deepcontext::server {

namespace {

std::shared_ptr<const LoadedProfile> Prepare(analysis::ProfileTree tree) {
  return std::make_shared<LoadedProfile>(std::move(tree));
}

} // namespace

LoadedProfile::LoadedProfile(analysis::ProfileTree tree)
    : tree_(std::move(tree)), view_binary_(exporter::RenderViewBinary(tree_)) {}

const std::string &LoadedProfile::view_stats_binary() const {
  std::call_once(stats_once_, [this] {
    view_stats_binary_ = exporter::RenderViewStatsBinary(tree_);
  });
  return view_stats_binary_;
}

const std::set<std::string> &LoadedProfile::source_files() const {
  std::call_once(sources_once_, [this] {
    for (const analysis::Frame &frame : tree_.frames()) {
      if (!frame.file.empty())
        source_files_.insert(frame.file);
    }
  });
  return source_files_;
}

const std::string &LoadedProfile::view_json() const {
  std::call_once(json_once_,
                 [this] { view_json_ = exporter::RenderViewData(tree_); });
  return view_json_;
}

const std::string &LoadedProfile::findings_json() const {
  std::call_once(findings_once_, [this] {
    findings_json_ = analyzer::AnalysisToJson(analyzer::Analyze(tree_));
  });
  return findings_json_;
}

ProfileStore::ProfileStore(std::vector<std::string> files) {
  for (const std::string &file : files) {
    entries_.push_back(std::make_unique<Entry>());
    entries_.back()->label = file;
  }
  if (files.size() > 1) {
    entries_.push_back(std::make_unique<Entry>());
    entries_.back()->label = "all profiles";
  }
  for (auto &entry : entries_)
    entry->result = entry->promise.get_future().share();
  loader_ = std::thread([this, files = std::move(files)] { LoadAll(files); });
}

ProfileStore::~ProfileStore() { loader_.join(); }

bool ProfileStore::Settled(size_t id) const {
  return entries_[id]->result.wait_for(std::chrono::seconds(0)) ==
         std::future_status::ready;
}

LoadResult ProfileStore::Get(size_t id) const {
  return entries_[id]->result.get();
}

void ProfileStore::LoadAll(const std::vector<std::string> &files) {
  // Profiles stay in memory until the merged tree is built from them.
  std::vector<format::Profile> reads;
  std::string first_failure;
  // Sampled GPU instructions are shown with their SASS text.
  sass::ProfileSass sass_labels;
  for (size_t i = 0; i < files.size(); ++i) {
    deepcontext::StatusOr<format::Profile> read =
        format::ReadProfileFile(files[i]);
    if (!read.ok()) {
      if (first_failure.empty())
        first_failure = read.status().message();
      entries_[i]->promise.set_value(
          Error{ErrorCode::kUnreadable, read.status().message()});
      continue;
    }
    for (const std::string &note : sass_labels.Annotate(*read, files[i]))
      std::fprintf(stderr, "deepcontext view: note: %s\n", note.c_str());
    try {
      if (files.size() == 1) {
        // Nothing else needs the file's profile: the tree takes it over,
        // which skips copying its values.
        std::vector<format::Profile> owned;
        owned.push_back(std::move(*read));
        entries_[i]->promise.set_value(Prepare(
            analysis::ProfileTree::FromOwnedProfiles(std::move(owned), files)));
        return;
      }
      entries_[i]->promise.set_value(
          Prepare(analysis::ProfileTree::FromProfile(*read, files[i])));
    } catch (const std::exception &e) {
      entries_[i]->promise.set_value(
          Error{ErrorCode::kUnreadable, files[i] + ": " + e.what()});
      if (first_failure.empty())
        first_failure = files[i] + ": " + e.what();
      continue;
    }
    if (files.size() > 1)
      reads.push_back(std::move(*read));
  }
  if (files.size() <= 1)
    return;
  Entry &merged = *entries_.back();
  if (!first_failure.empty()) {
    // A merge over the readable subset would misstate the job's totals.
    merged.promise.set_value(
        Error{ErrorCode::kUnreadable,
              "not every profile could be read (" + first_failure + ")"});
    return;
  }
  std::vector<analysis::ProfileInput> inputs;
  for (size_t i = 0; i < reads.size(); ++i) {
    inputs.push_back({&reads[i], files[i]});
  }
  try {
    merged.promise.set_value(
        Prepare(analysis::ProfileTree::FromProfiles(inputs)));
  } catch (const std::exception &e) {
    merged.promise.set_value(Error{ErrorCode::kUnreadable, e.what()});
  }
}

} // namespace deepcontext::server
