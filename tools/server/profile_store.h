// The profiles `deepcontext view` shows: each file as its own tree, plus,
// for several files, one merged tree (processes and ranks side by side).
// Files are read on a background thread from the start, so the server can
// answer at once and a file that cannot be read fails alone.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/analysis/profile_tree.h"
#include "tools/server/status_or.h"

namespace deepcontext::server {

// One readable profile, with what the API serves from it prepared once.
class LoadedProfile {
public:
  explicit LoadedProfile(analysis::ProfileTree tree);

  const analysis::ProfileTree &tree() const { return tree_; }
  // exporter::RenderViewBinary(tree), made at load: what the page asks for
  // first.
  const std::string &view_binary() const { return view_binary_; }
  // exporter::RenderViewStatsBinary(tree), made on first use: the page asks
  // for it once the first screen is drawn.
  const std::string &view_stats_binary() const;
  // exporter::RenderViewData(tree), made on first use (scripts only).
  const std::string &view_json() const;
  // analyzer::AnalysisToJson(analyzer::Analyze(tree)), made on first use:
  // the rules walk the whole tree, which a user who never opens the list
  // should not wait for. Its node ids index the same tree as view_binary.
  const std::string &findings_json() const;
  // Every file a frame names: the only files the source view may open.
  // Gathered on first use, not before the first screen.
  const std::set<std::string> &source_files() const;

private:
  analysis::ProfileTree tree_;
  std::string view_binary_;
  mutable std::once_flag stats_once_;
  mutable std::string view_stats_binary_;
  mutable std::once_flag sources_once_;
  mutable std::set<std::string> source_files_;
  mutable std::once_flag json_once_;
  mutable std::string view_json_;
  mutable std::once_flag findings_once_;
  mutable std::string findings_json_;
};

using LoadResult = StatusOr<std::shared_ptr<const LoadedProfile>>;

class ProfileStore {
public:
  // Starts reading files in order; the merged tree comes last.
  explicit ProfileStore(std::vector<std::string> files);
  ~ProfileStore();
  ProfileStore(const ProfileStore &) = delete;
  ProfileStore &operator=(const ProfileStore &) = delete;

  // Number of profiles: one per file, plus the merged one for 2+ files.
  size_t size() const { return entries_.size(); }

  // "train.dctx" as given on the command line, or "all profiles".
  const std::string &Label(size_t id) const { return entries_[id]->label; }

  // True once profile id has been read (or failed to be).
  bool Settled(size_t id) const;

  // Waits for profile id and returns it or why it could not be read;
  // id must be < size().
  LoadResult Get(size_t id) const;

private:
  struct Entry {
    std::string label;
    std::promise<LoadResult> promise;
    std::shared_future<LoadResult> result;
  };
  void LoadAll(const std::vector<std::string> &files);

  std::vector<std::unique_ptr<Entry>> entries_;
  std::thread loader_;
};

} // namespace deepcontext::server
